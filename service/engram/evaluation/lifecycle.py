"""`engram eval --lifecycle`: is what stays active after a sequence of writes right?

A labelled case is statements written one after another, and the truth at the end: groups of
statements that state one current fact each, and statements whose fact is stale (with the later
statement that replaced it, where the set says). Three sets (tests/data): ``lifecycle``
(paraphrases, details, updates, near misses), ``changes`` (changes the way people talk: detail in
the old statement, world knowledge, distractors that stay true) and ``keep-both`` (every statement
a distinct true fact: other people, the same kind of thing, names that start like filler words).
Each case is written through the real write path into a throwaway tenant; then every active memory
is traced back to the statements it holds (the one that created it, and any merged into it; a
touch adds nothing). Measured on the final active set:

- stale left active: a stale statement still holds an active memory (share of stale statements);
- marked below: of those, the ones whose every active holder is marked as perhaps replaced by a
  memory holding a later statement, and ranked below it by a search for the stale statement;
- stale handled: stale statements retired, or marked below (the share the issue bounds at 90%);
- facts lost: a current fact no active memory holds (share of current facts);
- duplicates: current facts held by more than one active memory (share of current facts);
- absorbed: current facts held only by memories that also hold another current fact (one was
  merged into the other: its words are gone);
- wrongly retired: current facts lost or absorbed (the keep-both set's figure);
- wrongly marked: current facts whose holder is marked as perhaps replaced by a newer memory
  (kept and found, but ranked below the newer one and left out by ``current_only``);
- precision: active memories that hold exactly one current fact and are its only holder;
- recall: current facts held by some active memory.

Cases are split in two halves by a hash of their id: ``calibration`` (look at it, tune on it) and
``heldout`` (report it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from uuid import UUID

from engram.domain.models import Memory, MemoryFilter, NewMemory, WriteOutcome
from engram.domain.search import SearchRequest
from engram.domain.tenancy import TenantContext
from engram.errors import InvalidInput
from engram.runtime import Engram

SPLITS = ("calibration", "heldout", "all")
# Each labelled set and the files it is read from (tests/data).
SETS: dict[str, tuple[str, ...]] = {
    "lifecycle": ("lifecycle.jsonl",),
    "changes": ("changes.jsonl",),
    "keep-both": ("keep_both_en.jsonl", "keep_both_zh.jsonl"),
}


@dataclass(frozen=True)
class Case:
    id: str
    lang: str
    category: str
    writes: list[str]
    current: list[list[int]]
    stale: list[int]
    replaced_by: dict[int, int] = field(default_factory=dict)  # stale statement -> the one that replaced it

    @property
    def split(self) -> str:
        return "calibration" if hashlib.sha256(self.id.encode()).digest()[0] % 2 == 0 else "heldout"


@dataclass
class Outcome:
    """What one case ended as."""

    case: Case
    stale_left: list[int]  # stale statements still holding an active memory
    marked_below: list[int]  # of those, marked as perhaps replaced and ranked below the newer memory
    lost: list[int]  # current groups (by index) no active memory holds
    duplicated: list[int]  # current groups held by more than one active memory
    absorbed: list[int]  # current groups held only by memories that hold another current group too
    active: int
    right: int  # active memories holding exactly one current group, its only holder
    marked: list[int] = field(default_factory=list)  # current groups with a holder marked as perhaps replaced
    outcomes: list[str] = field(default_factory=list)  # the write outcome of each statement

    @property
    def perfect(self) -> bool:
        problems = self.stale_left or self.lost or self.duplicated or self.absorbed or self.marked
        return not problems and self.right == self.active


def load_set(own_data: Path, name: str) -> list[Case]:
    if name not in SETS:
        raise InvalidInput(f"set is one of {', '.join(SETS)}, not {name!r}")
    return [case for filename in SETS[name] for case in load_cases(own_data / filename)]


def load_cases(path: Path) -> list[Case]:
    """Cases of a labelled file; a case without labels states a distinct current fact in each
    statement (the keep-both set)."""
    if not path.is_file():
        raise InvalidInput(f"{path} not found (run from the repository root, or pass --own-data)")
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        writes = row["writes"]
        current = row.get("current", [[i] for i in range(len(writes))])
        replaced_by = {int(k): int(v) for k, v in row.get("replaced_by", {}).items()}
        case = Case(row["id"], row["lang"], row["category"], writes, current, row.get("stale", []), replaced_by)
        placed = sorted([i for group in case.current for i in group] + case.stale)
        if placed != list(range(len(case.writes))):
            raise InvalidInput(f"{path}:{number}: every statement must be current or stale exactly once")
        if any(s not in case.stale or by <= s for s, by in replaced_by.items()):
            raise InvalidInput(f"{path}:{number}: replaced_by maps a stale statement to a later one")
        cases.append(case)
    return cases


def select(cases: list[Case], split: str) -> list[Case]:
    if split not in SPLITS:
        raise InvalidInput(f"split is one of {', '.join(SPLITS)}, not {split!r}")
    return [c for c in cases if split == "all" or c.split == split]


class Writer(Protocol):
    """How a case's statements reach engram: in this process, or as an agent does (over MCP)."""

    async def write(self, statement: str, replaces: list[UUID]) -> tuple[str, UUID]:
        """Write one statement; its outcome and the id of the memory that holds it now."""
        ...


# A writer for a tenant: given it, and its API key.
Connect = Callable[[TenantContext, str], AbstractAsyncContextManager[Writer]]
# What the caller says statement ``index`` replaces, given the memory holding each earlier one.
Replaces = Callable[[Case, int, dict[int, UUID]], list[UUID]]


def no_one_replaces(case: Case, index: int, holders: dict[int, UUID]) -> list[UUID]:
    return []


def as_labelled(case: Case, index: int, holders: dict[int, UUID]) -> list[UUID]:
    """An agent that settles every change the labels name: the statements this one replaced (by
    ``replaced_by``; without it, each stale statement is replaced by the first current statement
    after it)."""
    current = sorted(i for group in case.current for i in group)
    replaced_by = case.replaced_by or {s: next((c for c in current if c > s), len(case.writes) - 1) for s in case.stale}
    return [holders[s] for s, by in replaced_by.items() if by == index and s in holders]


class _InProcess:
    def __init__(self, engram: Engram, ctx: TenantContext) -> None:
        self._engram, self._ctx = engram, ctx

    async def write(self, statement: str, replaces: list[UUID]) -> tuple[str, UUID]:
        result = await self._engram.writes.write(self._ctx, NewMemory(content=statement, replaces=replaces))
        return result.outcome.value, result.memory.id


def in_process(engram: Engram) -> Connect:
    @contextlib.asynccontextmanager
    async def connect(ctx: TenantContext, key: str) -> AsyncIterator[Writer]:
        yield _InProcess(engram, ctx)

    return connect


async def run_case(
    engram: Engram, case: Case, replaces: Replaces = no_one_replaces, connect: Connect | None = None
) -> Outcome:
    """Write the statements one per call into a throwaway tenant and judge the active set.
    ``replaces``: what the caller says each statement replaces (an agent settling what the rules
    cannot); ``connect``: how the statements are written (default: in this process)."""
    ctx, key = await engram.tenants.create(f"lc-{uuid.uuid4().hex[:12]}")
    try:
        holds: dict[UUID, set[int]] = defaultdict(set)
        holder_of: dict[int, UUID] = {}
        outcomes = []
        async with (connect or in_process(engram))(ctx, key) as writer:
            for index, statement in enumerate(case.writes):
                outcome, memory_id = await writer.write(statement, replaces(case, index, holder_of))
                outcomes.append(outcome)
                holder_of[index] = memory_id
                if outcome in (WriteOutcome.created, WriteOutcome.superseded, WriteOutcome.merged):
                    holds[memory_id].add(index)
        active = (await engram.memories.list(ctx, MemoryFilter(), limit=500)).items
        below = await _marked_below(engram, ctx, case, active, holds)
    finally:
        await engram.tenants.drop(ctx.name)
    marked = {i for m in active if m.newer is not None for i in holds.get(m.id, set())}
    return judge_outcome(case, [holds.get(m.id, set()) for m in active], outcomes, below, marked)


async def _marked_below(
    engram: Engram, ctx: TenantContext, case: Case, active: list[Memory], holds: dict[UUID, set[int]]
) -> set[int]:
    """The stale statements still active whose every active holder is marked as perhaps replaced
    by a memory holding a later statement, and ranked below it when the stale statement itself is
    searched for (through the real search path; explain, so no use is counted)."""
    by_id = {m.id: m for m in active}
    below = set()
    for stale in case.stale:
        holders = [m for m in active if stale in holds.get(m.id, set())]
        if not holders:
            continue
        ranked = True
        for holder in holders:
            newer = by_id.get(holder.newer) if holder.newer is not None else None
            if newer is None or not any(j > stale for j in holds.get(newer.id, set())):
                ranked = False
                break
            request = SearchRequest(query=case.writes[stale][:4000], top_k=20, explain=True)
            order = [h.memory.id for h in (await engram.search.search(ctx, request)).hits]
            if newer.id not in order or (holder.id in order and order.index(holder.id) < order.index(newer.id)):
                ranked = False
                break
        if ranked:
            below.add(stale)
    return below


def judge_outcome(
    case: Case,
    active_holds: list[set[int]],
    outcomes: list[str],
    marked_below: set[int] | None = None,
    marked: set[int] | None = None,
) -> Outcome:
    """Score the final active set, each active memory given as the statements it holds (pure);
    ``marked_below``: the stale statements left active that are marked and ranked below."""
    group_of = {i: g for g, group in enumerate(case.current) for i in group}
    holders: dict[int, int] = defaultdict(int)  # current group -> active memories holding it
    alone: set[int] = set()  # current groups some active memory holds without another group
    right = 0
    for held in active_holds:
        groups = {group_of[i] for i in held if i in group_of}
        for g in groups:
            holders[g] += 1
        if len(groups) == 1:
            alone |= groups
        only_one_fact = len(groups) == 1 and all(i in group_of for i in held)
        if only_one_fact and holders[next(iter(groups))] == 1:  # the first holder of its fact
            right += 1
    stale_left = sorted({i for held in active_holds for i in held if i in case.stale})
    return Outcome(
        case=case,
        stale_left=stale_left,
        marked_below=[i for i in stale_left if i in (marked_below or set())],
        lost=[g for g in range(len(case.current)) if holders[g] == 0],
        duplicated=[g for g in range(len(case.current)) if holders[g] > 1],
        absorbed=[g for g in range(len(case.current)) if holders[g] and g not in alone],
        marked=[g for g in range(len(case.current)) if holders[g] and g in _only_marked(case, active_holds, marked)],
        active=len(active_holds),
        right=right,
        outcomes=outcomes,
    )


def _only_marked(case: Case, active_holds: list[set[int]], marked: set[int] | None) -> set[int]:
    """Current groups every active holder of which is marked (``marked``: the statements held by
    marked memories): ``current_only`` would leave that fact out."""
    group_of = {i: g for g, group in enumerate(case.current) for i in group}
    unmarked = {group_of[i] for held in active_holds if not held & (marked or set()) for i in held if i in group_of}
    return {group_of[i] for i in marked or set() if i in group_of} - unmarked


@dataclass(frozen=True)
class Summary:
    cases: int
    perfect: int
    stale: int
    stale_left: int
    marked_below: int
    facts: int
    lost: int
    duplicated: int
    absorbed: int
    marked: int
    active: int
    right: int

    @property
    def stale_left_rate(self) -> float:
        return self.stale_left / max(1, self.stale)

    @property
    def retired_rate(self) -> float:
        return (self.stale - self.stale_left) / max(1, self.stale)

    @property
    def handled_rate(self) -> float:
        """Stale statements retired, or marked and ranked below their successor."""
        return (self.stale - self.stale_left + self.marked_below) / max(1, self.stale)

    @property
    def lost_rate(self) -> float:
        return self.lost / max(1, self.facts)

    @property
    def duplicate_rate(self) -> float:
        return self.duplicated / max(1, self.facts)

    @property
    def wrongly_retired(self) -> int:
        return self.lost + self.absorbed

    @property
    def wrongly_retired_rate(self) -> float:
        return self.wrongly_retired / max(1, self.facts)

    @property
    def precision(self) -> float:
        return self.right / max(1, self.active)

    @property
    def recall(self) -> float:
        return (self.facts - self.lost) / max(1, self.facts)


def summarise(outcomes: list[Outcome]) -> Summary:
    return Summary(
        cases=len(outcomes),
        perfect=sum(o.perfect for o in outcomes),
        stale=sum(len(o.case.stale) for o in outcomes),
        stale_left=sum(len(o.stale_left) for o in outcomes),
        marked_below=sum(len(o.marked_below) for o in outcomes),
        facts=sum(len(o.case.current) for o in outcomes),
        lost=sum(len(o.lost) for o in outcomes),
        duplicated=sum(len(o.duplicated) for o in outcomes),
        absorbed=sum(len(o.absorbed) for o in outcomes),
        marked=sum(len(o.marked) for o in outcomes),
        active=sum(o.active for o in outcomes),
        right=sum(o.right for o in outcomes),
    )


async def evaluate_cases(
    engram: Engram,
    cases: list[Case],
    before_case: Callable[[Case], None] = lambda case: None,
    progress: Callable[[str], None] = lambda line: None,
    replaces: Replaces = no_one_replaces,
    connect: Connect | None = None,
) -> list[Outcome]:
    outcomes = []
    for n, case in enumerate(cases, 1):
        before_case(case)
        outcomes.append(await run_case(engram, case, replaces, connect))
        if n % 20 == 0:
            progress(f"lifecycle: {n}/{len(cases)} cases")
    return outcomes


def as_markdown(outcomes: list[Outcome], title: str) -> str:
    rows = [("all", outcomes)]
    for key in ("lang", "category"):
        values = sorted({getattr(o.case, key) for o in outcomes})
        rows += [(f"{key} {v}", [o for o in outcomes if getattr(o.case, key) == v]) for v in values]
    lines = [
        f"### {title}",
        "",
        "| cases | n | perfect | stale left active | of them marked below | stale retired | stale handled "
        "| facts lost | absorbed | wrongly retired | wrongly marked | duplicates | precision | recall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, group in rows:
        s = summarise(group)
        lines.append(
            f"| {name} | {s.cases} | {s.perfect} | {s.stale_left}/{s.stale} ({s.stale_left_rate:.1%}) "
            f"| {s.marked_below} | {s.retired_rate:.1%} | {s.handled_rate:.1%} "
            f"| {s.lost}/{s.facts} ({s.lost_rate:.1%}) | {s.absorbed} "
            f"| {s.wrongly_retired}/{s.facts} ({s.wrongly_retired_rate:.1%}) | {s.marked} "
            f"| {s.duplicated} ({s.duplicate_rate:.1%}) "
            f"| {s.precision:.3f} | {s.recall:.3f} |"
        )
    failures = [o for o in outcomes if not o.perfect]
    if failures:
        lines += ["", "Cases not perfect:", ""]
        for o in failures:
            problems = []
            if o.stale_left:
                marked = f" (marked below: {o.marked_below})" if o.marked_below else ""
                problems.append(f"stale left {o.stale_left}{marked}")
            if o.lost:
                problems.append(f"lost groups {o.lost}")
            if o.duplicated:
                problems.append(f"duplicated groups {o.duplicated}")
            if o.absorbed:
                problems.append(f"absorbed groups {o.absorbed}")
            if o.marked:
                problems.append(f"current groups marked {o.marked}")
            lines.append(f"- {o.case.id} ({o.case.category}): {'; '.join(problems) or 'wrong holders'}; {o.outcomes}")
    return "\n".join(lines)
