"""What a fact becomes when it is stored (pure): its dates resolved from when it was said, its first
person written as "the user", the day it names as when it happened. Transcript turns are kept as
they were said."""

from __future__ import annotations

from datetime import UTC, datetime, time

from engram.domain.boundary import within_bounds
from engram.domain.dates import absolute_day, resolve_relative_dates
from engram.domain.models import Kind, NewMemory
from engram.domain.perspective import in_third_person


def as_stored(item: NewMemory) -> NewMemory:
    """A fact as stored: its relative dates ("tomorrow", "下个月3号") absolute, from when it was said
    (``now``, else ``occurred_at``, else ``created_at``, else the server's clock), and its first person "the user"
    (domain/perspective.py); the day it names, relatively or by its date ("December 20",
    "12月20日"), becomes its occurred_at if it has none. Transcript turns are kept verbatim."""
    if item.kind != Kind.fact:
        return item
    said = item.now or item.occurred_at or item.created_at or datetime.now(UTC)
    said = said if said.tzinfo else said.replace(tzinfo=UTC)
    resolved = resolve_relative_dates(item.content, said)
    occurred = item.occurred_at
    day = resolved.day or absolute_day(item.content, said)
    if occurred is None and day is not None:
        noon = datetime.combine(day, time(12), tzinfo=said.tzinfo)
        # a day the text names ("July 4, 0001", or "tomorrow" said on 9998-12-31) holds what an
        # occurred_at given outright must: a date the arithmetic and the database can hold
        occurred = noon if within_bounds(noon) else None
    content = in_third_person(resolved.text)
    if content == item.content and occurred == item.occurred_at:
        return item
    return item.model_copy(update={"content": content, "occurred_at": occurred})
