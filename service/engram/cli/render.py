"""What the CLI prints for people: tables and cards (rich). ``--json`` prints the same data as the
REST API returns it, for scripts."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table
from rich.text import Text

from engram.cli.common import print_json
from engram.domain.models import HistoryEvent, Memory, MemoryPage, WriteResult
from engram.domain.provisioning import TenantList
from engram.domain.search import SearchResult
from engram.domain.timeline import Timeline
from engram.domain.users import UserPage
from engram.services.transfer import ImportSummary

# Piped into a file or a pager, lines are not cut to 80 columns.
console = Console(width=None if sys.stdout.isatty() else 200)
# Characters of a memory's content shown in a table row; `engram get ID` shows all of it.
CONTENT = 80


def show(data: Any, as_json: bool) -> None:
    """The data as JSON (``--json``), or in the form people read best."""
    if as_json:
        print_json(_plain(data))
        return
    if isinstance(data, SearchResult):
        console.print(hits_table(data) if data.hits else "no memory matches")
    elif isinstance(data, MemoryPage):
        console.print(memories_table(data.items) if data.items else "no memories")
        if data.next_cursor:
            console.print(f"more: --cursor {data.next_cursor}", style="dim")
    elif isinstance(data, WriteResult):
        console.print(f"[bold]{data.outcome.value}[/bold] {data.memory.id}")
        for old in data.superseded:
            console.print(f"  replaces {old.id}: {_short(old.content)}", style="dim")
    elif isinstance(data, Memory):
        console.print(memory_card(data))
    elif isinstance(data, UserPage):
        console.print(users_table(data) if data.users else "no users")
        if data.next_cursor:
            console.print(f"more: --after {data.next_cursor}", style="dim")
    elif isinstance(data, Timeline):
        console.print(timeline_table(data) if data.points else "no memories")
    elif isinstance(data, TenantList):
        console.print(tenants_table(data) if data.tenants else "no tenants (engram tenant create NAME)")
    elif isinstance(data, ImportSummary):
        console.print(import_table(data))
    elif isinstance(data, list) and all(isinstance(e, HistoryEvent) for e in data):
        console.print(history_table(data))
    elif isinstance(data, BaseModel):
        console.print_json(data.model_dump_json())
    else:
        console.print(data)


def _plain(data: Any) -> Any:
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json")
    if isinstance(data, list):
        return [_plain(d) for d in data]
    return data


def _short(text: str, width: int = CONTENT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _when(at: datetime | None) -> str:
    return f"{at:%Y-%m-%d %H:%M}" if at else ""


def hits_table(result: SearchResult) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("content", min_width=24, ratio=1)
    for column in ("type", "date", "id"):
        table.add_column(column, no_wrap=True)
    for hit in result.hits:
        m = hit.memory
        table.add_row(
            f"{hit.score:.3f}", _short(m.content), m.type.value, _when(m.occurred_at or m.created_at), str(m.id)
        )
    return table


def memories_table(memories: Iterable[Memory]) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("created", no_wrap=True)
    table.add_column("content", min_width=24, ratio=1)
    for column in ("type", "status", "tags", "id"):
        table.add_column(column, no_wrap=True)
    for m in memories:
        status = m.status.value + (" (pinned)" if m.pinned else "")
        table.add_row(_when(m.created_at), _short(m.content), m.type.value, status, ", ".join(m.tags), str(m.id))
    return table


def users_table(page: UserPage) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    for column in ("user", "active", "superseded", "forgotten", "last written"):
        table.add_column(column, no_wrap=True, justify="left" if column in ("user", "last written") else "right")
    for u in page.users:
        table.add_row(u.user_id, str(u.active), str(u.superseded), str(u.forgotten), _when(u.last_written_at))
    return table


# Width of the longest bar of a timeline, in characters.
BAR = 40


def tenants_table(listed: TenantList) -> Table:
    table = Table("name", "schema", "created (UTC)", "managed by", box=None, header_style="bold")
    for t in listed.tenants:
        table.add_row(t.name, t.schema_name, _when(t.created_at), t.managed_by or "-")
    return table


def import_table(summary: ImportSummary) -> Table:
    table = Table("", "memories", box=None, header_style="bold", title=f"imported from a {summary.format.value} file")
    rows = [
        ("read", summary.read),
        ("imported", summary.imported),
        ("already present", summary.already_present),
        ("erased before", summary.erased),
        ("same fact as one held", summary.duplicates),
        ("supersession links", summary.links),
    ]
    for name, count in rows:
        if count or name in ("read", "imported"):
            table.add_row(name, str(count))
    for outcome, count in sorted(summary.outcomes.items()):
        table.add_row(f"  written: {outcome}", str(count))
    return table


def timeline_table(timeline: Timeline) -> Table:
    """One row a day, week, month or year: its counts by type and a bar to compare them by."""
    types = sorted({t for p in timeline.points for t in p.counts})
    most = max(sum(p.counts.values()) for p in timeline.points)
    table = Table(show_edge=False, pad_edge=False, title=f"{timeline.total} memories by {timeline.bucket.value}")
    table.add_column(timeline.bucket.value, no_wrap=True)
    for t in types:
        table.add_column(t, justify="right")
    table.add_column("", no_wrap=True)
    for p in timeline.points:
        total = sum(p.counts.values())
        bar = "█" * max(1, round(BAR * total / most))
        table.add_row(p.start.date().isoformat(), *(str(p.counts.get(t, "")) for t in types), bar)
    return table


def memory_card(m: Memory) -> Table:
    card = Table.grid(padding=(0, 2))
    card.add_column(style="bold")
    card.add_column()
    rows: list[tuple[str, str | Text]] = [
        ("content", Text(m.content)),
        ("id", str(m.id)),
        ("kind / type / layer", f"{m.kind.value} / {m.type.value} / {m.layer.value}"),
        ("status", m.status.value + (f" by {m.superseded_by}" if m.superseded_by else "")),
        ("pinned", "yes" if m.pinned else "no"),
        ("importance", f"{m.importance:.2f}"),
        ("happened", _when(m.occurred_at)),
        ("created / updated", f"{_when(m.created_at)} / {_when(m.updated_at)}"),
        ("mentions / returned", f"{m.mentions} / {m.access_count}"),
        ("tags", ", ".join(m.tags)),
        ("session / task", " / ".join(x or "-" for x in (m.session_id, m.task_id))),
        ("source", m.source or ""),
    ]
    for name, value in rows:
        if value:
            card.add_row(name, value)
    return card


def history_table(events: list[HistoryEvent]) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    for column in ("at", "event", "actor", "content", "details"):
        table.add_column(column, no_wrap=column not in ("content", "details"))
    for e in events:
        details = ", ".join(f"{k}: {v}" for k, v in e.details.items())
        table.add_row(_when(e.at), e.event, e.actor or "", _short(e.content or "", 60), _short(details, 60))
    return table
