"""MCP tools, defined once; each calls the same service functions as the REST routes."""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Annotated, Any, Literal, TypeVar
from uuid import UUID

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp.types import Resource as MCPResource
from pydantic import BaseModel, Field, ValidationError

from engram import __version__
from engram.domain.boundary import Count, Flag, Instant, Metadata, Number, Query, Text, UserId
from engram.domain.brief_writes import BriefBatch, BriefRemember, BriefWrite
from engram.domain.judgement import Turn
from engram.domain.models import (
    MAX_BATCH_CEILING,
    Closed,
    HistoryEvent,
    Kind,
    Layer,
    Memory,
    MemoryFilter,
    MemoryPatch,
    MemoryType,
    NewMemory,
    Status,
)
from engram.domain.search import BriefPage, BriefResult, Detail, SearchRequest
from engram.domain.tenancy import TenantContext
from engram.errors import EngramError, InvalidInput, invalid_input
from engram.mcp.server import EngramMCPServer, tool_error_text
from engram.observability import metrics
from engram.observability.outages import Outage
from engram.runtime import Engram
from engram.store.db import unreachable

TENANT_SCOPE_KEY = "engram.tenant"
ToolFn = TypeVar("ToolFn", bound=Callable[..., Any])
Contains = Annotated[Text | None, Field(min_length=1, max_length=200, description="content holds this text (any case)")]

INSTRUCTIONS = """engram is your long-term memory of the user. Memories say "the user" (engram
writes what the user says in "I" that way).

Writing, use ONE of the two for a given piece of information, never both (that stores it twice):
- remember: after a user turn, pass what the user said (and your reply). engram picks the durable
  facts, drops greetings, questions, passing moods and "don't remember this", splits a turn into
  atomic facts and turns "tomorrow" into a date. The easy default.
- write_memory: when you have already distilled one atomic fact yourself ("The user prefers tea").
  Set kind="turn" to keep a transcript line verbatim instead.
A repeat is counted, not stored twice; a detail is merged; a change engram is sure of ("I switched
to tea") supersedes what it replaces, history kept.

Settling changes: every write returns `candidates`, older memories the new fact may update. When
the new fact makes one of them no longer true (a new job, a move, "finished my PhD", "eating fish
again"), write the fact again with replaces=[that id] (or pass replaces on the first write). A
candidate with marked=true is one engram thinks may be replaced: search ranks it below the newer
one and shows `newer`; settle it the same way, or leave it if both are true.

Reading: call search_memory before answering anything about the user or past work. Time words work
("last week", "上次", "in May"); a question about a time alone returns that time's memories in order.
Each hit has a score in [0, 1]; a hit with `newer` may be out of date (current_only=true hides such).

Users: if this connection serves several end users, pass user_id (the user you are talking with)
on every call: each user's memories stay theirs; the tenant's shared ones are seen by all. On a
per-user URL (/t/{tenant}/u/{user}/mcp) or with a user's key, leave it out.

Correcting: forget_memory when the user asks you to forget something or a memory is wrong;
update_memory to fix one (pinned=true keeps it from ever being forgotten by the schedule)."""

MemoryId = Annotated[UUID, Field(description="id of the memory")]
ForUser = Annotated[
    UserId | None,
    Field(
        description="the end user this call is for (their memories and the tenant's shared ones); "
        "not needed on a per-user URL (/t/{tenant}/u/{user}/mcp) or with a user's key"
    ),
]
REPLACES = "ids of older memories this makes no longer true (from a result's candidates or a search): superseded by it"


class History(BaseModel):
    events: list[HistoryEvent]


def compact(result: BaseModel) -> CallToolResult:
    """The result as structured content and as one line of JSON text, absent fields left out (the
    SDK's default text is indented: an agent's context pays for every byte)."""
    return CallToolResult(
        content=[TextContent(type="text", text=result.model_dump_json())],
        structured_content=result.model_dump(mode="json"),
    )


@contextlib.contextmanager
def tool_errors(tool: str, database: Callable[[], Outage] | None = None) -> Iterator[None]:
    """Expected failures reach the model as ToolError; anything else stays masked by the SDK.
    Every call is timed, by tool and outcome. The database out of reach is the service's outage
    (``database``), logged once however many calls meet it."""
    started, outcome = time.perf_counter(), "error"
    try:
        yield
        outcome = "ok"
    except EngramError as exc:
        raise _tool_error(exc) from exc
    except ValidationError as exc:
        raise _tool_error(invalid_input(exc.errors(include_url=False, include_input=False))) from exc
    except Exception as exc:
        if unreachable(exc):
            if database is not None:
                database().began(exc)
            raise ToolError("unavailable: the database is unavailable; retry shortly") from exc
        raise
    finally:
        metrics.tools.labels(tool, outcome).observe(time.perf_counter() - started)


@contextlib.contextmanager
def resource_errors(name: str, database: Callable[[], Outage] | None = None) -> Iterator[None]:
    """As tool_errors, raised as the resource error the SDK passes on (it hides any other)."""
    try:
        with tool_errors(name, database):
            yield
    except ToolError as exc:
        raise ResourceError(str(exc)) from None


def _tool_error(exc: EngramError) -> ToolError:
    return ToolError(tool_error_text(exc))


def build_mcp(
    engram: Callable[[], Engram], stdio_tenant: Callable[[], Awaitable[TenantContext]] | None = None
) -> MCPServer:
    """The MCP server. Over HTTP the tenant comes from the authenticated request (see guard.py);
    over stdio it is the one given at start-up."""
    server = EngramMCPServer(name="engram", title="engram memory", version=__version__, instructions=INSTRUCTIONS)

    async def tenant_of(ctx: Context, user_id: str | None = None) -> TenantContext:
        """The request's tenant, acting for ``user_id`` if given (refused if pinned to another)."""
        request = ctx.request_context.request
        if request is not None:
            tenant = request.scope.get(TENANT_SCOPE_KEY)
            if isinstance(tenant, TenantContext):
                return tenant.pinned_to(user_id)
        if stdio_tenant is not None:
            return (await stdio_tenant()).pinned_to(user_id)
        raise ToolError("no authenticated tenant for this request")

    def errors(tool: str) -> contextlib.AbstractContextManager[None]:
        return tool_errors(tool, lambda: engram().database)

    def tool(**options: Any) -> Callable[[ToolFn], ToolFn]:
        """server.tool, its description the docstring without the source's indentation."""

        def register(fn: ToolFn) -> ToolFn:
            return server.tool(description=inspect.cleandoc(fn.__doc__ or ""), **options)(fn)

        return register

    def annotations(*, read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations:
        return ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=destructive,
            idempotent_hint=idempotent,
            open_world_hint=False,
        )

    read_only = annotations(read_only=True, destructive=False, idempotent=True)
    # Saying a thing again counts as another mention (it strengthens the memory against forgetting).
    writes = annotations(read_only=False, destructive=False, idempotent=False)
    restores = annotations(read_only=False, destructive=False, idempotent=True)
    # Forgetting, editing and closing change what the agent will find (undoable: restore, history);
    # the same call again changes nothing more.
    changes_content = annotations(read_only=False, destructive=True, idempotent=True)

    @tool(title="Write a memory", annotations=writes)
    async def write_memory(
        ctx: Context,
        content: Annotated[str, Field(min_length=1, description="one atomic fact, e.g. 'The user prefers tea'")],
        kind: Annotated[
            Kind, Field(description="fact (deduplicated, merged, superseded) or turn (a transcript line, verbatim)")
        ] = Kind.fact,
        type: Annotated[MemoryType, Field(description="fact, preference, event or task")] = MemoryType.fact,
        layer: Annotated[
            Layer, Field(description="long_term, or session/task for short-lived memories")
        ] = Layer.long_term,
        importance: Annotated[Number, Field(ge=0, le=1, description="0 trivial .. 1 critical")] = 0.5,
        tags: Annotated[list[str] | None, Field(description="labels to filter by later")] = None,
        source: Annotated[str | None, Field(description="where this came from")] = None,
        external_id: Annotated[str | None, Field(description="your own id, echoed back")] = None,
        occurred_at: Annotated[Instant | None, Field(description="when it happened, ISO 8601")] = None,
        created_at: Annotated[
            Instant | None, Field(description="when it was first written, for one brought from another store")
        ] = None,
        session_id: Annotated[str | None, Field(description="required for layer=session")] = None,
        task_id: Annotated[str | None, Field(description="required for layer=task")] = None,
        metadata: Annotated[Metadata | None, Field(description="free-form JSON")] = None,
        pinned: Annotated[Flag, Field(description="never forgotten by the schedule")] = False,
        now: Annotated[
            Instant | None, Field(description="when it was said, for 'tomorrow' or '下个月3号' (default: now)")
        ] = None,
        replaces: Annotated[list[UUID] | None, Field(description=REPLACES)] = None,
        agent_id: Annotated[UserId | None, Field(description="the agent writing it, to filter by later")] = None,
        detail: Annotated[
            Detail, Field(description="brief: outcome, id, content, candidates; full: every field of each memory")
        ] = Detail.brief,
        user_id: ForUser = None,
    ) -> Annotated[CallToolResult, BriefWrite]:
        """Store one atomic memory you distilled yourself (after a user turn, prefer remember).
        Outcomes: created; duplicate or touched (the same fact was already stored: its mention
        count goes up); merged (it added detail to an existing memory); superseded (it changes
        older memories, which are retired and listed, history kept). `candidates` are older
        memories it may update: pass the ids of those it makes untrue in replaces. Relative dates
        become absolute dates; "I" becomes "the user"."""
        with errors("write_memory"):
            item = NewMemory(
                content=content,
                kind=kind,
                type=type,
                layer=layer,
                importance=importance,
                tags=tags or [],
                source=source,
                external_id=external_id,
                occurred_at=occurred_at,
                created_at=created_at,
                session_id=session_id,
                task_id=task_id,
                metadata=metadata or {},
                pinned=pinned,
                now=now,
                replaces=replaces or [],
                agent_id=agent_id,
            )
            result = await engram().writes.write(await tenant_of(ctx, user_id), item, actor="mcp")
            return compact(BriefWrite.of(result, detail))

    @tool(title="Write several memories", annotations=writes)
    async def write_memories(
        ctx: Context,
        items: Annotated[
            list[NewMemory], Field(min_length=1, max_length=MAX_BATCH_CEILING, description="memories, in order")
        ],
        detail: Annotated[
            Detail, Field(description="brief: outcome, id, content, candidates; full: every field of each memory")
        ] = Detail.brief,
        user_id: ForUser = None,
    ) -> Annotated[CallToolResult, BriefBatch]:
        """Remember several memories in one transaction; results come back in the same order."""
        with errors("write_memories"):
            results = await engram().writes.write_batch(await tenant_of(ctx, user_id), items, actor="mcp")
            return compact(BriefBatch.of(results, detail))

    @tool(title="Search memories", annotations=read_only)
    async def search_memory(
        ctx: Context,
        query: Annotated[Query, Field(min_length=1, max_length=4000, description="what to look for")],
        top_k: Annotated[
            Count | None, Field(le=50, description="how many memories to return (default: the tenant's top_k)")
        ] = None,
        types: Annotated[list[MemoryType] | None, Field(description="only these types")] = None,
        kinds: Annotated[list[Kind] | None, Field(description="facts, transcript turns, or both (default)")] = None,
        layers: Annotated[list[Layer] | None, Field(description="only these layers")] = None,
        statuses: Annotated[list[Status] | None, Field(description="default: active only")] = None,
        created_after: Annotated[Instant | None, Field(description="stored at or after, ISO 8601")] = None,
        created_before: Annotated[Instant | None, Field(description="stored before, ISO 8601")] = None,
        occurred_after: Annotated[Instant | None, Field(description="when it happened, inclusive")] = None,
        occurred_before: Annotated[Instant | None, Field(description="when it happened, exclusive")] = None,
        session_id: Annotated[str | None, Field(description="only this conversation's memories")] = None,
        task_id: Annotated[str | None, Field(description="only this task's memories")] = None,
        tags: Annotated[list[str] | None, Field(description="memories carrying all of these tags")] = None,
        pinned: Annotated[Flag | None, Field(description="true: only pinned memories; false: only unpinned")] = None,
        contains: Contains = None,
        current_only: Annotated[
            Flag, Field(description="leave out memories a newer one may have replaced (those with `newer`)")
        ] = False,
        now: Annotated[
            Instant | None, Field(description="the time 'last week' or '上次' in the query count from (default: now)")
        ] = None,
        detail: Annotated[
            Detail, Field(description="brief: id, content, type, date, score; full: every field and channel scores")
        ] = Detail.brief,
        explain: Annotated[Flag, Field(description="also return every channel's candidates")] = False,
        own_only: Annotated[
            Flag, Field(description="with a user: that user's memories only, not the tenant's shared ones")
        ] = False,
        agent_id: Annotated[UserId | None, Field(description="only memories this agent wrote")] = None,
        user_id: ForUser = None,
    ) -> Annotated[CallToolResult, BriefResult]:
        """Find the memories that answer a query (meaning + words + exact identifiers, with
        conversation context), best first, each with a score in [0, 1]. Time words are understood:
        "last week", "in May", "上周" favour that time; a question about a time alone ("what did I do
        last week") returns that time's memories in the order they happened; "上次"/"last time"
        puts the latest match first. An empty list means nothing stored matches."""
        with errors("search_memory"):
            f = MemoryFilter.named(locals())  # the filter arguments, under the fields' names
            request = SearchRequest(query=query, top_k=top_k, explain=explain, now=now, filter=f)
            result = await engram().search.search(await tenant_of(ctx, user_id), request)
            return compact(BriefResult.of(result, detail))

    @tool(
        title="Forget a memory",
        annotations=changes_content,
    )
    async def forget_memory(
        ctx: Context,
        memory_id: MemoryId,
        reason: Annotated[Text | None, Field(max_length=500, description="why, kept in the history")] = None,
        user_id: ForUser = None,
    ) -> Memory:
        """Forget a memory: it no longer appears in searches. Restorable with restore_memory."""
        with errors("forget_memory"):
            return await engram().memories.forget(await tenant_of(ctx, user_id), memory_id, actor="mcp", reason=reason)

    @tool(title="Restore a forgotten memory", annotations=restores)
    async def restore_memory(ctx: Context, memory_id: MemoryId, user_id: ForUser = None) -> Memory:
        """Bring a forgotten memory back."""
        with errors("restore_memory"):
            return await engram().memories.restore(await tenant_of(ctx, user_id), memory_id, actor="mcp")

    @tool(title="Get a memory", annotations=read_only)
    async def get_memory(ctx: Context, memory_id: MemoryId, user_id: ForUser = None) -> Memory:
        """One memory by id, whatever its status."""
        with errors("get_memory"):
            return await engram().memories.get(await tenant_of(ctx, user_id), memory_id)

    @tool(title="List memories", annotations=read_only)
    async def list_memories(
        ctx: Context,
        types: Annotated[list[MemoryType] | None, Field(description="only these types")] = None,
        kinds: Annotated[list[Kind] | None, Field(description="facts, transcript turns, or both (default)")] = None,
        layers: Annotated[list[Layer] | None, Field(description="only these layers")] = None,
        statuses: Annotated[list[Status] | None, Field(description="default: active only")] = None,
        tags: Annotated[list[str] | None, Field(description="memories carrying all of these tags")] = None,
        pinned: Annotated[Flag | None, Field(description="true: only pinned memories; false: only unpinned")] = None,
        contains: Contains = None,
        current_only: Annotated[
            Flag, Field(description="leave out memories a newer one may have replaced (those with `newer`)")
        ] = False,
        session_id: Annotated[str | None, Field(description="only this conversation's memories")] = None,
        task_id: Annotated[str | None, Field(description="only this task's memories")] = None,
        created_after: Annotated[Instant | None, Field(description="stored at or after, ISO 8601")] = None,
        created_before: Annotated[Instant | None, Field(description="stored before, ISO 8601")] = None,
        occurred_after: Annotated[Instant | None, Field(description="when it happened, inclusive")] = None,
        occurred_before: Annotated[Instant | None, Field(description="when it happened, exclusive")] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="memories per page")] = 50,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page")] = None,
        detail: Annotated[
            Detail, Field(description="brief: id, content, type, date; full: every field")
        ] = Detail.brief,
        own_only: Annotated[
            Flag, Field(description="with a user: that user's memories only, not the tenant's shared ones")
        ] = False,
        agent_id: Annotated[UserId | None, Field(description="only memories this agent wrote")] = None,
        user_id: ForUser = None,
    ) -> Annotated[CallToolResult, BriefPage]:
        """Memories newest first, one page at a time (to browse; to answer a question, search)."""
        with errors("list_memories"):
            f = MemoryFilter.named(locals())  # the filter arguments, under the fields' names
            page = await engram().memories.list(await tenant_of(ctx, user_id), f, limit, cursor)
            return compact(BriefPage.of(page, detail))

    @tool(
        title="Update a memory",
        annotations=changes_content,
    )
    async def update_memory(
        ctx: Context,
        memory_id: MemoryId,
        content: Annotated[str | None, Field(min_length=1, description="new content (re-embedded)")] = None,
        type: MemoryType | None = None,
        importance: Annotated[Number | None, Field(ge=0, le=1)] = None,
        occurred_at: Annotated[
            Instant | Literal["unknown"] | None, Field(description="when it happened (ISO 8601), or 'unknown'")
        ] = None,
        tags: list[str] | None = None,
        metadata: Metadata | None = None,
        pinned: Annotated[Flag | None, Field(description="true: never forgotten by the schedule")] = None,
        user_id: ForUser = None,
    ) -> Memory:
        """Correct a memory; the previous content is kept in its history."""
        with errors("update_memory"):
            given: dict[str, Any] = {
                "content": content,
                "type": type,
                "importance": importance,
                "tags": tags,
                "metadata": metadata,
                "pinned": pinned,
            }
            changes = {k: v for k, v in given.items() if v is not None}
            if occurred_at is not None:
                changes["occurred_at"] = None if occurred_at == "unknown" else occurred_at
            patch = MemoryPatch.model_validate(changes)
            return await engram().memories.update(await tenant_of(ctx, user_id), memory_id, patch, actor="mcp")

    @tool(title="History of a memory", annotations=read_only)
    async def memory_history(ctx: Context, memory_id: MemoryId, user_id: ForUser = None) -> History:
        """Every change of a memory, oldest first: written, updated, forgotten, restored..."""
        with errors("memory_history"):
            return History(events=await engram().memories.history(await tenant_of(ctx, user_id), memory_id))

    @tool(title="Remember from a conversation turn", annotations=writes)
    async def remember(
        ctx: Context,
        user: Annotated[str, Field(min_length=1, description="what the user said in this turn")],
        assistant: Annotated[str | None, Field(description="your reply, for context")] = None,
        session_id: Annotated[str | None, Field(description="the conversation's id")] = None,
        task_id: Annotated[str | None, Field(description="the task's id, if any")] = None,
        occurred_at: Annotated[Instant | None, Field(description="when the turn happened, ISO 8601")] = None,
        now: Annotated[
            Instant | None, Field(description="when the user said it, for 'tomorrow' or '下个月3号' (default: now)")
        ] = None,
        replaces: Annotated[list[UUID] | None, Field(description=REPLACES)] = None,
        agent_id: Annotated[UserId | None, Field(description="the agent that heard it")] = None,
        detail: Annotated[
            Detail, Field(description="brief: outcome, id, content, candidates; full: every field of each memory")
        ] = Detail.brief,
        user_id: ForUser = None,
    ) -> Annotated[CallToolResult, BriefRemember]:
        """The default way to remember: give the user's turn and engram keeps what is durable.
        Greetings, questions, passing moods and "don't remember this" are skipped; a turn with two
        facts gives two memories; relative dates become dates; each fact is stored once (a repeat
        is counted, a change supersedes what it surely replaces). Each result lists `candidates`
        it may update: to retire one, call write_memory with that result's content and
        replaces=[its id] (this settles, it stores nothing twice). Do not otherwise also call
        write_memory for the same turn."""
        with errors("remember"):
            turn = Turn(
                user=user,
                assistant=assistant,
                session_id=session_id,
                task_id=task_id,
                occurred_at=occurred_at,
                now=now,
                source="mcp",
                replaces=replaces or [],
                agent_id=agent_id,
            )
            kept = await engram().ingest.remember(await tenant_of(ctx, user_id), turn, actor="mcp")
            return compact(BriefRemember.of(kept.results, kept.judge, kept.judgement.reason, detail))

    @tool(title="Close a session or task", annotations=changes_content)
    async def close_scope(
        ctx: Context,
        session_id: Annotated[str | None, Field(description="the session that ended")] = None,
        task_id: Annotated[str | None, Field(description="the task that ended")] = None,
        user_id: ForUser = None,
    ) -> Closed:
        """Forget the short-lived memories of a finished session or task (restorable)."""
        with errors("close_scope"):
            return Closed(
                closed=await engram().memories.close(await tenant_of(ctx, user_id), session_id, task_id, actor="mcp")
            )

    @server.resource(
        "engram://memories/{view}",
        name="memories",
        title="Recent or pinned memories",
        description="engram://memories/recent: the 20 newest active memories; engram://memories/pinned: "
        "the pinned ones (facts the user wants kept), newest first. Brief JSON, as list_memories returns.",
        mime_type="application/json",
    )
    async def memories_resource(view: str, ctx: Context) -> str:
        with resource_errors("resource memories", lambda: engram().database):
            if view not in VIEWS:
                raise InvalidInput(f"unknown view {view!r}: recent or pinned", field="view")
            page = await engram().memories.list(await tenant_of(ctx), VIEWS[view], VIEW_SIZE)
            return BriefPage.of(page, Detail.brief).model_dump_json()

    # The same views as resources of their own: a client's attach menu lists resources, not templates.
    server.listed = tuple(
        MCPResource(uri=f"engram://memories/{view}", name=f"{view} memories", description=about, mime_type=JSON)
        for view, about in VIEW_DESCRIPTIONS.items()
    )

    @server.prompt(title="Answer with memory")
    def recall(question: Annotated[str, Field(description="what the user asked")]) -> str:
        """Look up what is known about the user before answering a question."""
        return (
            f"Before answering, call search_memory with a short query for what this needs: {question}\n"
            "Use the memories that answer it (a newer memory wins over an older one), say so when "
            "nothing stored answers it, and do not invent what the memories do not say."
        )

    @server.prompt(title="Remember this conversation")
    def remember_conversation() -> str:
        """Store what is worth keeping from the conversation so far."""
        return (
            "Go through this conversation's user turns. For each one that states something durable about "
            "the user (a fact, a preference, a plan, a change), call remember with that turn's text and "
            "your reply. Skip greetings, questions and passing moods. Call nothing else for the same turns."
        )

    return server


# The views of engram://memories/{view}, and how many memories a view shows.
VIEWS = {"recent": MemoryFilter(), "pinned": MemoryFilter(pinned=True)}
VIEW_SIZE = 20
VIEW_DESCRIPTIONS = {
    "recent": f"the {VIEW_SIZE} newest active memories (brief JSON, as list_memories returns)",
    "pinned": "the facts the user wants kept, newest first (brief JSON, as list_memories returns)",
}
JSON = "application/json"
