"""The memory and its companions, shared by every layer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from engram.domain.boundary import Content, Flag, Instant, Metadata, Number, Text, UserId


class MemoryType(StrEnum):
    fact = "fact"
    preference = "preference"
    event = "event"
    task = "task"


class Layer(StrEnum):
    long_term = "long_term"
    session = "session"
    task = "task"


class Status(StrEnum):
    active = "active"
    superseded = "superseded"
    forgotten = "forgotten"


class Kind(StrEnum):
    """A fact is deduplicated, merged and superseded; a turn is a line of a transcript, kept
    verbatim: only an identical line of the same conversation is a duplicate of it."""

    fact = "fact"
    turn = "turn"


class Memory(BaseModel):
    """One atomic memory as stored."""

    model_config = ConfigDict(frozen=True)

    id: UUID
    content: str
    kind: Kind = Kind.fact
    type: MemoryType
    layer: Layer
    source: str | None
    external_id: str | None
    # Stored as float4: 0.6 reads back as 0.6000000238418579, and what was set is what is shown.
    importance: Annotated[float, AfterValidator(lambda value: round(value, 6))]
    language: str
    created_at: datetime
    updated_at: datetime
    occurred_at: datetime | None
    last_accessed_at: datetime | None
    access_count: int = Field(description="how often it was returned to an agent by a search")
    mentions: int = Field(1, description="how often the fact was stated (written again in any wording)")
    reinforced_at: datetime | None = Field(None, description="last stated, returned or restored")
    pinned: bool = Field(False, description="never forgotten by the schedule")
    status: Status
    superseded_by: UUID | None
    newer: UUID | None = Field(
        None, description="a newer memory that may have replaced this one: search ranks this one below it"
    )
    user_id: str | None = Field(None, description="the end user it belongs to; none: the tenant's, shared")
    agent_id: str | None = Field(None, description="the agent that wrote it")
    session_id: str | None
    task_id: str | None
    tags: list[str]
    metadata: dict[str, Any]
    embedding_model: str
    forgotten_at: datetime | None = None
    derived_from: list[UUID] = Field(default_factory=list, description="sources of a consolidated memory")


def _scoped(layer: str, scope: str) -> dict[str, Any]:
    """A memory of this layer needs its scope's id (documented here; refused by the write path)."""
    return {
        "if": {"properties": {"layer": {"const": layer}}, "required": ["layer"]},
        "then": {"properties": {scope: {"type": "string", "minLength": 1}}, "required": [scope]},
    }


class NewMemory(BaseModel):
    """What a caller gives to store one memory. A session-layer memory needs a session_id, a
    task-layer one a task_id."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"allOf": [_scoped("session", "session_id"), _scoped("task", "task_id")]}
    )

    content: Content = Field(min_length=1, description="one atomic fact, preference, event or task")
    kind: Kind = Field(
        Kind.fact,
        description="fact (deduplicated, merged, superseded) or turn (a transcript line, kept verbatim)",
    )
    type: MemoryType = MemoryType.fact
    layer: Layer = Layer.long_term
    importance: Number = Field(0.5, ge=0, le=1)
    source: Text | None = Field(None, max_length=500, description="where it came from")
    external_id: Text | None = Field(None, max_length=200, description="the caller's id, echoed back")
    occurred_at: Instant | None = None
    created_at: Instant | None = Field(
        None,
        description="when it was first written, for a memory brought from another store (its timeline and age "
        "count from then); default: now",
    )
    user_id: UserId | None = Field(
        None, description="the end user it belongs to (none: the tenant's own, shared with every user)"
    )
    agent_id: UserId | None = Field(None, description="the agent that wrote it, to filter by later")
    session_id: Text | None = Field(None, max_length=200)
    task_id: Text | None = Field(None, max_length=200)
    tags: list[Text] = Field(default_factory=list, max_length=50)
    metadata: Metadata = Field(default_factory=dict, description="free-form JSON, at most 32 deep and 64 KB")
    pinned: Flag = Field(False, description="never forgotten by the schedule")
    now: Instant | None = Field(
        None,
        description="when this was said, for relative dates in a fact ('tomorrow', '下个月3号'); "
        "default: occurred_at, else created_at, else the server's clock",
    )
    replaces: list[UUID] = Field(
        default_factory=list,
        max_length=50,
        description="ids of older memories this one makes no longer true: they are superseded by it (history "
        "kept), as when engram sees the change itself; a write's `candidates` list the ones it may replace",
    )


def _never_null(schema: dict[str, Any]) -> None:
    """The published schema of an update's field that is given or left out: its type alone, no
    null and no default (None in Python means left out; a null sent is refused)."""
    schema.pop("default", None)
    schema.update(next(member for member in schema.pop("anyOf") if member != {"type": "null"}))


class MemoryPatch(BaseModel):
    """Fields an update may change; absent fields stay as they are. Only occurred_at may be set to
    null (unknown); a null for any other field is refused."""

    # An update with no field is refused (422), and documented so.
    model_config = ConfigDict(extra="forbid", json_schema_extra={"minProperties": 1})

    content: Content | None = Field(None, min_length=1, json_schema_extra=_never_null)
    type: MemoryType | None = Field(None, json_schema_extra=_never_null)
    importance: Number | None = Field(None, ge=0, le=1, json_schema_extra=_never_null)
    occurred_at: Instant | None = None
    tags: list[Text] | None = Field(None, max_length=50, json_schema_extra=_never_null)
    metadata: Metadata | None = Field(None, json_schema_extra=_never_null)
    pinned: Flag | None = Field(
        None, description="pin (never forgotten by the schedule) or unpin", json_schema_extra=_never_null
    )


class WriteOutcome(StrEnum):
    created = "created"
    duplicate = "duplicate"  # exact copy of an active memory: that memory's mentions went up
    touched = "touched"  # same fact in other words: the existing memory's mentions went up
    merged = "merged"  # added detail to an existing memory, which now holds both
    superseded = "superseded"  # changes older memories: stored, and every one it replaces superseded


class Candidate(BaseModel):
    """An active memory a write looked at: one the new fact may update or contradict."""

    id: UUID
    content: str
    type: MemoryType
    date: datetime = Field(description="when it happened, else when it was stored")
    created_at: datetime
    similarity: float = Field(description="cosine similarity to the new fact")
    marked: bool = Field(
        False, description="this write marked it: the new fact may have replaced it (its `newer` points there)"
    )


class WriteResult(BaseModel):
    outcome: WriteOutcome
    memory: Memory = Field(description="the memory that now holds the fact")
    external_id: str | None = None
    related: Memory | None = Field(None, description="for superseded: the (first) older memory it replaced")
    superseded: list[Memory] = Field(
        default_factory=list, description="every older memory this write retired (a change retires all it replaces)"
    )
    candidates: list[Candidate] = Field(
        default_factory=list,
        description="active older memories the new fact may update or contradict, closest first; if it makes one "
        "no longer true, write it again with replaces=[its id]",
    )


class BatchWriteResult(BaseModel):
    results: list[WriteResult] = Field(description="one per item, in the order given")


class Closed(BaseModel):
    closed: list[Memory] = Field(description="the memories forgotten because their session or task ended")


class MemoryFilter(BaseModel):
    """Filters shared by search and list."""

    model_config = ConfigDict(extra="forbid")

    user_id: UserId | None = Field(
        None, description="this end user's memories and the tenant's shared ones (none: every memory of the tenant)"
    )
    own_only: Flag = Field(False, description="with user_id: that user's memories only, not the shared ones")
    agent_id: UserId | None = Field(None, description="only memories this agent wrote")
    types: list[MemoryType] | None = None
    kinds: list[Kind] | None = Field(None, description="facts, transcript turns, or both (default)")
    layers: list[Layer] | None = None
    statuses: list[Status] = Field(default_factory=lambda: [Status.active])
    created_after: Instant | None = None
    created_before: Instant | None = None
    occurred_after: Instant | None = Field(None, description="when it happened (its creation if unknown), inclusive")
    occurred_before: Instant | None = Field(None, description="exclusive")
    session_id: Text | None = None
    task_id: Text | None = None
    tags: list[Text] | None = Field(None, description="memories carrying all of these tags")
    pinned: Flag | None = Field(None, description="true: only pinned memories; false: only unpinned ones")
    contains: Text | None = Field(
        None, min_length=1, max_length=200, description="memories whose content holds this text (any case)"
    )
    current_only: Flag = Field(
        False, description="leave out memories a newer one may have replaced (those with `newer`)"
    )

    def owners(self) -> list[str]:
        """Whose memories it reaches, as stored ('' the tenant's own): its user's and the shared ones
        (own_only: the user's alone; without a user, own_only means the shared ones alone)."""
        if self.user_id is None:
            return [""]
        return [self.user_id] if self.own_only else [self.user_id, ""]

    @classmethod
    def named(cls, arguments: Mapping[str, Any], spelling: Mapping[str, str] | None = None) -> MemoryFilter:
        """The filter a face's arguments name, each under the field's name or the face's spelling of it
        (``tag`` for ``tags``). Arguments that are no filter, and absent ones, are left out: no status
        means active ones."""
        spelled = {(spelling or {}).get(name, name): value for name, value in arguments.items()}
        return cls(**{k: v for k, v in spelled.items() if k in cls.model_fields and v is not None and v != []})


# The most memories one batch may ever hold (ENGRAM_MAX_BATCH_SIZE is at most this): a longer list
# is refused while it is read, before any of its items is validated.
MAX_BATCH_CEILING = 500

# How REST and the CLI spell the repeatable filters: one ?tag= or --tag per value.
SINGULAR = {"type": "types", "kind": "kinds", "layer": "layers", "status": "statuses", "tag": "tags"}


class Event(StrEnum):
    """What happened to a memory, as its history records it."""

    written = "written"
    updated = "updated"
    touched = "touched"  # stated again
    merged = "merged"  # a detail merged in
    superseded = "superseded"  # replaced by a newer memory (superseded_by)
    derived = "derived"  # summarised from others by consolidation
    forgotten = "forgotten"
    restored = "restored"
    purged = "purged"
    pinned = "pinned"
    unpinned = "unpinned"
    marked = "marked"  # a newer memory may have replaced it (newer)
    unmarked = "unmarked"  # no longer: restated, or the newer one was forgotten


@dataclass(frozen=True)
class HistoryRow:
    """One event to record in a memory's history."""

    memory_id: UUID
    event: Event
    content: str | None
    actor: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


class HistoryEvent(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    memory_id: UUID
    event: Event
    at: datetime
    actor: str | None
    content: str | None
    details: dict[str, Any]


class MemoryCounts(BaseModel):
    """How many memories a tenant holds: active ones by type and by layer, all by status."""

    by_type: dict[str, int]
    by_layer: dict[str, int]
    by_status: dict[str, int]


class MemoryPage(BaseModel):
    items: list[Memory]
    next_cursor: str | None = Field(None, description="pass back to get the next page")
