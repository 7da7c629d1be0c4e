"""Pure rules of a memory's life: decay, and when two texts cannot be the same fact."""

from __future__ import annotations

import math
import re
from datetime import datetime

from pydantic import BaseModel, Field

from engram.domain.identifiers import extract_identifiers

_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


class DecayWeights(BaseModel):
    """decay = importance * importance_weight + ln(access_count + 1) * access_weight - days * daily_decay"""

    importance_weight: float = Field(0.5, ge=0)
    access_weight: float = Field(0.3, ge=0)
    daily_decay: float = Field(0.01, ge=0)


def decay_score(
    importance: float, access_count: int, last_accessed_at: datetime, now: datetime, weights: DecayWeights
) -> float:
    days = max(0.0, (now - last_accessed_at).total_seconds() / 86400)
    return (
        importance * weights.importance_weight
        + math.log(access_count + 1) * weights.access_weight
        - days * weights.daily_decay
    )


def numbers_of(text: str) -> frozenset[str]:
    """Every number and identifier in a text: two texts that differ here state different facts."""
    numbers = {n.replace(",", ".").lstrip("0") or "0" for n in _NUMBER.findall(text)}
    return frozenset(numbers | set(extract_identifiers(text)))


def may_be_same_fact(a: str, b: str) -> bool:
    """False when the numbers, ids or dates differ ("order 12345" is not "order 12346")."""
    return numbers_of(a) == numbers_of(b)
