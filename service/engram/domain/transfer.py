"""Export and import formats (pure): engram's own JSON Lines, and the exports of two other memory
stores read as new memories.

engram's format, one JSON object per line:

    {"engram": "memories", "version": 1, "tenant": ..., "embedding_model": ..., "exported_at": ...}
    {"memory": {...every field of a Memory...}, "history": [{"event": ..., "at": ..., ...}]}
    ...
    {"end": {"memories": N}}

Vectors are not exported: an import embeds with the target tenant's own model, so an export moves
between models. The closing line tells a complete file from one cut short.

Foreign formats become ``NewMemory`` items that go through the ordinary write path (dedup, merge,
supersede), each with an ``external_id`` derived from the source, so importing twice adds nothing:
- ``mem0``: the items of ``Memory.get_all()`` (``{"results": [...]}``, a list, or one item per
  line), each with ``id`` and ``memory``;
- ``mcp-memory``: the JSON Lines file of the MCP reference memory server
  (``@modelcontextprotocol/server-memory``): entities with observations, and relations.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engram.domain.boundary import bounded_instant, readable, within_bounds
from engram.domain.models import Kind, Memory, NewMemory
from engram.errors import InvalidInput

M = TypeVar("M", bound=BaseModel)
FORMAT_NAME = "memories"
FORMAT_VERSION = 1


class Format(StrEnum):
    engram = "engram"
    mem0 = "mem0"
    mcp_memory = "mcp-memory"


class Header(BaseModel):
    engram: str = FORMAT_NAME
    version: int = FORMAT_VERSION
    tenant: str
    embedding_model: str
    exported_at: datetime


class ExportedEvent(BaseModel):
    """One entry of a memory's history, as it happened (its row id is the source's own)."""

    event: str
    at: datetime
    actor: str | None = None
    content: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class ExportedMemory(BaseModel):
    model_config = ConfigDict(extra="forbid")

    memory: Memory
    history: list[ExportedEvent] = Field(default_factory=list)


class ImportedMemory(Memory):
    """A memory as an import reads it: each of its dates holds to the bounds of any date a caller
    sends (domain/boundary.py). An export is made from the database, so its dates are unchecked."""

    @field_validator("*")
    @classmethod
    def _bounded(cls, value: Any) -> Any:
        return bounded_instant(value) if isinstance(value, datetime) else value


class ImportedLine(ExportedMemory):
    """A memory's line as an import reads it: the memory's dates and its history's bounded."""

    memory: ImportedMemory

    @field_validator("history")
    @classmethod
    def _bounded(cls, events: list[ExportedEvent]) -> list[ExportedEvent]:
        for index, event in enumerate(events):
            try:
                bounded_instant(event.at)
            except ValueError as exc:
                raise ValueError(f"entry {index}'s at {exc}") from None
        return events


class End(BaseModel):
    memories: int = Field(ge=0)


def header_line(header: Header) -> str:
    return header.model_dump_json() + "\n"


def memory_line(memory: Memory, history: list[ExportedEvent]) -> str:
    return ExportedMemory(memory=memory, history=history).model_dump_json() + "\n"


def end_line(count: int) -> str:
    return json.dumps({"end": {"memories": count}}, separators=(",", ":")) + "\n"


def detect(first: dict[str, Any]) -> Format:
    """Which format a file is in, from its first object."""
    if first.get("engram") == FORMAT_NAME:
        return Format.engram
    if first.get("type") in ("entity", "relation"):
        return Format.mcp_memory
    if isinstance(first.get("memory"), str) or isinstance(first.get("results"), list):
        return Format.mem0
    raise InvalidInput(
        "cannot tell the file's format: expected an engram export, a mem0 export or an MCP memory server file "
        "(name it with --format)",
        field="format",
    )


def read_header(data: dict[str, Any]) -> Header:
    if data.get("engram") != FORMAT_NAME:
        raise InvalidInput("line 1: not an engram export (no header line)", field="line 1")
    if data.get("version") != FORMAT_VERSION:
        raise InvalidInput(f"line 1: export version {data.get('version')!r}, this engram reads {FORMAT_VERSION}")
    return validated(Header, data, 1)


def read_memory(data: dict[str, Any], number: int) -> ExportedMemory | End:
    if "end" in data:
        return validated(End, data["end"], number)
    return validated(ImportedLine, data, number)


def validated(model: type[M], data: Any, number: int) -> M:
    """``data`` as ``model``, or a 422 naming the file's line and the field at fault."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problem = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise InvalidInput(f"line {number}: {where}: {problem['msg']}", field=f"line {number}") from None


def _external_id(source: str, *parts: str) -> str:
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
    return f"{source}:{digest}"


# What a mem0 record says about itself, kept in the new memory's metadata.
MEM0_KEPT = ("id", "user_id", "agent_id", "run_id", "created_at", "updated_at")


def mem0_items(data: dict[str, Any] | list[Any], number: int) -> list[NewMemory]:
    """A mem0 memory, or a whole ``get_all()`` result, as new memories."""
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        data = data["results"]
    records = data if isinstance(data, list) else [data]
    out = []
    for record in records:
        if not isinstance(record, dict) or not isinstance(record.get("memory"), str) or not readable(record["memory"]):
            raise InvalidInput(
                f"line {number}: a mem0 memory needs a non-empty 'memory' text (something visible)",
                field=f"line {number}",
            )
        source_id = str(record.get("id") or record["memory"])
        kept = {k: record[k] for k in MEM0_KEPT if k in record}
        metadata = _given(record, "metadata", dict)
        categories = _given(record, "categories", list)
        out.append(
            _new(
                content=record["memory"],
                external_id=_external_id("mem0", source_id),
                source="mem0",
                tags=[str(c) for c in categories][:50],
                metadata={**metadata, "mem0": kept},
                # when mem0 stored it: the timeline, "in October" and the age for forgetting count from then
                created_at=_instant(record.get("created_at")),
                # mem0's users and agents are engram's: each keeps its own memories
                user_id=_given(record, "user_id", str) or None,
                agent_id=_given(record, "agent_id", str) or None,
                number=number,
            )
        )
    return out


def _instant(value: Any) -> datetime | None:
    """An ISO 8601 time engram can hold (mem0 writes them with an offset, or none: UTC), else none."""
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return None
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    return at if within_bounds(at) else None


def _given(record: dict[str, Any], key: str, kind: type) -> Any:
    """The record's value at ``key`` if it has the expected JSON type, else an empty one."""
    value = record.get(key)
    return value if isinstance(value, kind) else kind()


def mcp_memory_items(data: dict[str, Any], number: int) -> list[NewMemory]:
    """An entity (one memory per observation) or a relation of the MCP reference memory server."""
    kind = data.get("type")
    if kind == "entity":
        name, entity_type = str(data.get("name", "")).strip(), str(data.get("entityType", "")).strip()
        observations = data.get("observations") or []
        if not readable(name) or not isinstance(observations, list):
            raise InvalidInput(f"line {number}: an entity needs a name and a list of observations")
        return [
            _new(
                content=f"{name}: {observation}",
                external_id=_external_id("mcp-memory", "entity", name, str(observation)),
                source="mcp-memory",
                tags=[entity_type] if entity_type else [],
                metadata={"mcp_memory": {"entity": name, "entityType": entity_type}},
                number=number,
            )
            for observation in observations
            if readable(str(observation))  # an invisible one says nothing of the entity
        ]
    if kind == "relation":
        ends = [str(data.get(k, "")).strip() for k in ("from", "relationType", "to")]
        if not all(readable(end) for end in ends):
            raise InvalidInput(f"line {number}: a relation needs from, relationType and to")
        start, relation, end = ends
        return [
            _new(
                content=f"{start} {relation.replace('_', ' ')} {end}",
                external_id=_external_id("mcp-memory", "relation", *ends),
                source="mcp-memory",
                tags=["relation"],
                metadata={"mcp_memory": {"from": start, "relationType": relation, "to": end}},
                number=number,
            )
        ]
    raise InvalidInput(f"line {number}: expected an entity or a relation, got type {kind!r}", field=f"line {number}")


def _new(*, number: int, **fields: Any) -> NewMemory:
    return validated(NewMemory, {"kind": Kind.fact, **fields}, number)
