"""What a judge decides: which facts of a conversation turn to keep, how two memories relate."""

from __future__ import annotations

from enum import StrEnum
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from engram.domain.boundary import Instant, Text, UserId
from engram.domain.models import Layer, MemoryType


class Turn(BaseModel):
    """One conversation turn to remember from."""

    model_config = ConfigDict(extra="forbid")

    user: Text = Field(min_length=1, max_length=20_000, description="what the user said")
    assistant: Text | None = Field(None, max_length=20_000, description="the assistant's reply, for context")
    user_id: UserId | None = Field(None, description="the end user who said it (none: the tenant's own memories)")
    agent_id: UserId | None = Field(None, description="the agent that heard it")
    session_id: Text | None = Field(None, max_length=200)
    task_id: Text | None = Field(None, max_length=200)
    occurred_at: Instant | None = None
    now: Instant | None = Field(
        None, description="when the turn was said, for 'tomorrow' or '下个月3号' (default: occurred_at, else now)"
    )
    source: Text | None = Field(None, max_length=500)
    replaces: list[UUID] = Field(
        default_factory=list,
        max_length=50,
        description="ids of older memories this turn makes no longer true: superseded by its first fact",
    )


class Fact(BaseModel):
    """One atomic fact the judge wants written."""

    content: str = Field(min_length=1, max_length=2000)
    type: MemoryType = MemoryType.fact
    importance: float = Field(0.5, ge=0, le=1)
    layer: Layer = Layer.long_term


class TurnJudgement(BaseModel):
    should_write: bool
    facts: list[Fact] = Field(default_factory=list)
    reason: str = ""


class Relation(StrEnum):
    same = "same"  # the same fact in other words: touch the existing memory
    supplement = "supplement"  # adds detail to the existing memory: merge
    conflict = "conflict"  # contradicts it: the new memory supersedes the old
    may_update = "may_update"  # perhaps makes it stale, unsure: both kept, the old one marked
    different = "different"  # unrelated enough: store separately


class MergeVerdict(BaseModel):
    relation: Relation
    merged_content: str | None = Field(None, description="for supplement: the one memory holding both")
    reason: str = ""


class ForgetVerdict(BaseModel):
    """The judge's last word on a memory the schedule would forget."""

    forget: bool
    reason: str = ""
