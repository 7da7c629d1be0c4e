"""Similarity thresholds of an embedding model (near duplicates, noise), shared by writes,
consolidation, calibration and search."""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, Field

# Two events this far apart are two events ("went to the dentist" in March and in June).
DISTINCT_EVENTS = timedelta(days=1)


class Thresholds(BaseModel):
    """Cosine similarities of one embedding model (they do not transfer between models)."""

    touch: float = Field(ge=0, le=1, description="consolidation looks at pairs at or above this")
    judge: float = Field(ge=0, le=1, description="at or above: ask the judge how the two relate")
    noise: float = Field(
        0.0, ge=0, lt=1, description="a query and an unrelated memory reach this cosine: no evidence at or below"
    )
    wide: float | None = Field(
        None, ge=0, le=1, description="what an LLM judge, or a change announced outright, is shown down to"
    )


def happened_apart(a: datetime | None, b: datetime | None) -> bool:
    """Whether two memories record things that happened at clearly different times."""
    return a is not None and b is not None and abs(a - b) >= DISTINCT_EVENTS
