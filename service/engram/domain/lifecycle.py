"""Pure rules of a memory's life: decay, what the schedule may forget, and when two texts cannot be
the same fact."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, Field

from engram.domain.numbers import numbers_of


class DecayWeights(BaseModel):
    """decay = importance x importance_weight + ln(1 + uses) x access_weight
    + ln(mentions) x mention_weight - days since last reinforced x daily_decay"""

    importance_weight: float = Field(0.5, ge=0)
    access_weight: float = Field(0.3, ge=0)
    mention_weight: float = Field(0.5, ge=0, description="a fact said again weighs more")
    daily_decay: float = Field(0.01, ge=0)


# Kinds of memory that state how things are: the current version stays until something replaces it.
DURABLE_TYPES = frozenset({"fact", "preference"})


@dataclass(frozen=True)
class DecayInput:
    importance: float
    uses: int  # returned to an agent by a search
    mentions: int  # stated (written again in any wording)
    reinforced_at: datetime  # last stated, used or restored
    type: str
    kind: str
    pinned: bool


@dataclass(frozen=True)
class Assessment:
    """Whether the schedule may forget a memory, with its decay score and the reason either way."""

    candidate: bool
    score: float
    reason: str
    why: str  # the reason's kind, for counts: pinned | current fact | decay | unused


def decay_score(memory: DecayInput, now: datetime, weights: DecayWeights) -> float:
    days = max(0.0, (now - memory.reinforced_at).total_seconds() / 86400)
    return (
        memory.importance * weights.importance_weight
        + math.log(1 + memory.uses) * weights.access_weight
        + math.log(max(1, memory.mentions)) * weights.mention_weight
        - days * weights.daily_decay
    )


def assess(memory: DecayInput, now: datetime, weights: DecayWeights, threshold: float, unused_days: int) -> Assessment:
    """A pinned memory and the current version of a fact or preference are never forgotten for age;
    anything else is a candidate when its decay falls below the threshold, or when it was said once,
    never used, and not reinforced for ``unused_days``."""
    score = round(decay_score(memory, now, weights), 4)
    days = max(0, (now - memory.reinforced_at).days)
    facts = f"importance {memory.importance:.2f}, said {memory.mentions}x, used {memory.uses}x, {days} days ago"
    if memory.pinned:
        return Assessment(False, score, "pinned: never forgotten by the schedule", "pinned")
    if memory.kind == "fact" and memory.type in DURABLE_TYPES:
        reason = f"a current {memory.type}: kept until something replaces it ({facts})"
        return Assessment(False, score, reason, "current fact")
    if score < threshold:
        return Assessment(True, score, f"decay {score:.3f} below {threshold} ({facts})", "decay")
    if memory.uses == 0 and memory.mentions <= 1 and days >= unused_days:
        return Assessment(True, score, f"said once and never used in {days} days", "unused")
    return Assessment(False, score, f"decay {score:.3f} at or above {threshold} ({facts})", "decay")


def may_be_same_fact(a: str, b: str) -> bool:
    """False when the numbers, ids or dates differ ("order 12345" is not "order 12346", "六千人"
    is not "六百人")."""
    return numbers_of(a) == numbers_of(b)
