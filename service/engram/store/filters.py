"""MemoryFilter -> a parameterised SQL condition (no values are ever interpolated)."""

from __future__ import annotations

from typing import Any

from engram.domain.models import MemoryFilter


class Params:
    """Collects positional parameters; ``add`` returns the placeholder for a value."""

    def __init__(self, *initial: Any) -> None:
        self.values: list[Any] = list(initial)

    def add(self, value: Any) -> str:
        self.values.append(value)
        return f"${len(self.values)}"


def where(f: MemoryFilter, params: Params, alias: str = "m") -> str:
    clauses = [f"{alias}.status = ANY({params.add([s.value for s in f.statuses])}::text[])"]
    if f.user_id is not None or f.own_only:
        # through the owner index: '' is the tenant's own memories (a user id is never empty)
        clauses.append(f"coalesce({alias}.user_id, '') = ANY({params.add(f.owners())}::text[])")
    if f.agent_id is not None:
        clauses.append(f"{alias}.agent_id = {params.add(f.agent_id)}")
    if f.types:
        clauses.append(f"{alias}.type = ANY({params.add([t.value for t in f.types])}::text[])")
    if f.kinds:
        clauses.append(f"{alias}.kind = ANY({params.add([k.value for k in f.kinds])}::text[])")
    if f.layers:
        clauses.append(f"{alias}.layer = ANY({params.add([x.value for x in f.layers])}::text[])")
    if f.created_after:
        clauses.append(f"{alias}.created_at >= {params.add(f.created_after)}")
    if f.created_before:
        clauses.append(f"{alias}.created_at < {params.add(f.created_before)}")
    if f.occurred_after:
        clauses.append(f"coalesce({alias}.occurred_at, {alias}.created_at) >= {params.add(f.occurred_after)}")
    if f.occurred_before:
        clauses.append(f"coalesce({alias}.occurred_at, {alias}.created_at) < {params.add(f.occurred_before)}")
    if f.session_id:
        clauses.append(f"{alias}.session_id = {params.add(f.session_id)}")
    if f.task_id:
        clauses.append(f"{alias}.task_id = {params.add(f.task_id)}")
    if f.tags:
        clauses.append(f"{alias}.tags @> {params.add(list(f.tags))}::text[]")
    if f.pinned is not None:
        clauses.append(f"{alias}.pinned = {params.add(f.pinned)}")
    if f.current_only:
        clauses.append(f"{alias}.newer_id IS NULL")
    if f.contains:
        clauses.append(f"strpos(lower({alias}.content), lower({params.add(f.contains)})) > 0")
    return " AND ".join(clauses)
