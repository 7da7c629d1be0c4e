"""How long a tenant keeps its memories: a lifetime per layer and per memory type, and how long a
forgotten memory waits before it is purged. Pure: the forgetting job applies it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict

from engram.domain.models import Layer, MemoryType

# A hundred years: longer is no retention at all (leave the layer or type out).
MAX_DAYS = 36_500
Days = Annotated[float, Field(gt=0, le=MAX_DAYS), Strict()]


class Retention(BaseModel):
    """A tenant's retention; what it leaves out keeps the service's defaults (session memories a
    day, task memories a week, long-term ones until decay lets them go, purge after 30 days)."""

    model_config = ConfigDict(extra="forbid")

    layers: dict[Layer, Days] = Field(
        default_factory=dict, description='days a memory of the layer lives, e.g. {"session": 7}'
    )
    types: dict[MemoryType, Days] = Field(
        default_factory=dict, description='days a memory of the type lives, e.g. {"event": 365}'
    )
    purge_after_days: Annotated[float, Field(ge=0, le=MAX_DAYS), Strict()] | None = Field(
        None, description="days a forgotten memory stays restorable before it is purged"
    )


@dataclass(frozen=True)
class Lifetimes:
    """A retention with the service's defaults filled in: days per layer and per type (None:
    no limit) and the purge delay."""

    layers: dict[Layer, float]
    types: dict[MemoryType, float]
    purge_after_days: float

    @classmethod
    def of(cls, retention: Retention, session_days: float, task_days: float, purge_days: float) -> Lifetimes:
        layers = {Layer.session: session_days, Layer.task: task_days} | dict(retention.layers)
        purge = retention.purge_after_days if retention.purge_after_days is not None else purge_days
        return cls(layers=layers, types=dict(retention.types), purge_after_days=purge)

    def cutoffs(self, now: datetime) -> tuple[dict[Layer, datetime], dict[MemoryType, datetime]]:
        """Memories stored before these times have outlived their layer's, or their type's, lifetime."""
        return (
            {layer: now - timedelta(days=days) for layer, days in self.layers.items()},
            {type_: now - timedelta(days=days) for type_, days in self.types.items()},
        )

    def why_expired(self, layer: Layer, type_: MemoryType, created_at: datetime, now: datetime) -> str | None:
        """The rule a memory has outlived (the shorter, if both), or None."""
        limits = ((layer.value, self.layers.get(layer)), (type_.value, self.types.get(type_)))
        rules = sorted((days, f"{name} memories") for name, days in limits if days is not None)
        for days, what in rules:
            if created_at < now - timedelta(days=days):
                return f"retention: {what} live {_days(days)}"
        return None


def _days(days: float) -> str:
    if days < 1:
        return f"{days * 24:g} hours"
    return f"{days:g} day" + ("" if days == 1 else "s")
