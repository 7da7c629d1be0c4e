"""Near-duplicate thresholds and the merge decision, shared by writes, consolidation and calibration."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Thresholds(BaseModel):
    """Cosine similarities of one embedding model (they do not transfer between models)."""

    touch: float = Field(ge=0, le=1, description="at or above (same numbers, no conflict cue): the same fact")
    judge: float = Field(ge=0, le=1, description="at or above: ask the judge how the two relate")
