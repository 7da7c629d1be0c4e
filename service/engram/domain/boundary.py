"""What any caller may send, checked once where it comes in (REST, MCP and CLI build the same
models from these types): text PostgreSQL can store, metadata of a bounded depth and size, and
instants the time arithmetic can hold. A value outside is refused with the field's name, before
it reaches the database or a serialiser."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator

# PostgreSQL text cannot hold NUL, and UTF-8 cannot encode a lone surrogate.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
METADATA_DEPTH = 32
METADATA_BYTES = 64 * 1024
# Instants stay clear of the ends of what datetime holds, so that a week or a year either side,
# or a time zone, never overflows.
EARLIEST = datetime(2, 1, 1, tzinfo=UTC)
LATEST = datetime(9998, 12, 31, tzinfo=UTC)


def storable_text(value: str) -> str:
    found = _UNSTORABLE.search(value)
    if found is not None:
        what = "a NUL character" if found.group(0) == "\x00" else "a lone surrogate (invalid Unicode)"
        raise ValueError(f"contains {what} at position {found.start()}")
    return value


def _depth(value: Any, limit: int) -> int:
    """How deep a JSON value nests, counted no further than the limit (iterative: any input)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def bounded_metadata(value: dict[str, Any]) -> dict[str, Any]:
    if _depth(value, METADATA_DEPTH) > METADATA_DEPTH:
        raise ValueError(f"nests deeper than {METADATA_DEPTH} levels")
    for key, item in _walk(value):
        storable_text(key)
        if isinstance(item, str):
            storable_text(item)
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size > METADATA_BYTES:
        raise ValueError(f"is {size} bytes as JSON; the limit is {METADATA_BYTES}")
    return value


def _walk(value: Any) -> list[tuple[str, Any]]:
    """Every (key, value) of nested dicts and every string of nested lists, iteratively."""
    out, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                out.append((str(key), child))
                stack.append(child)
        elif isinstance(item, list):
            out.extend(("", child) for child in item)
            stack.extend(item)
    return out


def bounded_instant(value: datetime) -> datetime:
    """A time zone is required to compare (a naive time is taken as UTC); the year must leave room
    for time arithmetic either side."""
    if not EARLIEST.year <= value.year <= LATEST.year:  # checked before any arithmetic can overflow
        raise ValueError(f"must lie between {EARLIEST.date()} and {LATEST.date()}")
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


Text = Annotated[str, AfterValidator(storable_text)]
Metadata = Annotated[dict[str, Any], AfterValidator(bounded_metadata)]
Instant = Annotated[datetime, AfterValidator(bounded_instant)]
