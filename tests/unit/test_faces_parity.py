"""REST, MCP and the CLI are three faces of one contract: for every operation, each face takes
every field of the operation's request model (under its own spelling), and no face invents one.

The models are the contract (NewMemory, MemoryPatch, MemoryFilter, SearchRequest, Turn); this
test reads the faces' own declarations (the published OpenAPI, the MCP tool schemas, the CLI's
options) so a field added to a model and forgotten by a face fails here."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import typer

from engram.api.app import create_app
from engram.api.routes.memories import memory_filter
from engram.cli.common import app as cli_app
from engram.cli.memories import FILTER_SPELLING
from engram.domain.judgement import Turn
from engram.domain.models import MemoryFilter, MemoryPatch, NewMemory
from engram.domain.search import SearchRequest
from engram.mcp.tools import build_mcp
from engram.settings import Settings

# One spelling per field: a face may use a singular for a repeatable option (`--tag`, `?tag=`).
SPELLINGS = {
    "type": "types",
    "kind": "kinds",
    "layer": "layers",
    "status": "statuses",
    "tag": "tags",
    "session": "session_id",
    "task": "task_id",
    "top_k": "top_k",
}
FILTER = set(MemoryFilter.model_fields)
# What each operation takes, from its models. A face's own plumbing (the tenant, paging, output
# form) is listed apart, per face, below.
OPERATIONS: dict[str, set[str]] = {
    "write": set(NewMemory.model_fields),
    "update": set(MemoryPatch.model_fields) | {"memory_id", "user_id"},  # acting for a user
    "search": (set(SearchRequest.model_fields) - {"filter"}) | FILTER,
    "list": FILTER | {"limit", "cursor"},
    "remember": set(Turn.model_fields),
    "timeline": FILTER | {"bucket"},
}
# Operations a face leaves out on purpose, and why.
NOT_OFFERED = {("mcp", "timeline"): "counts to draw for people (browser, CLI); an agent searches or lists"}
PLUMBING = {
    "rest": set(),
    "mcp": {"detail"},
    "cli": {"tenant", "as_json", "json"},
}
# Where a face sets a field itself: the CLI's and MCP's writes are labelled by their face.
SET_BY_FACE = {"source"}


def canonical(names: set[str], wanted: set[str]) -> set[str]:
    """The model's names for a face's: `tag` is `tags` where the model says tags, itself elsewhere."""
    return {n if n in wanted else SPELLINGS.get(n, n) for n in names}


def published_openapi() -> dict[str, Any]:
    placeholder = "postgresql://parity@127.0.0.1:1/parity"
    return create_app(Settings(database_url=placeholder, state_dir=Path("/nonexistent")), placeholder).openapi()


def body_fields(spec: dict[str, Any], path: str, method: str) -> set[str]:
    operation = spec["paths"][path][method]
    names = {p["name"] for p in operation.get("parameters", []) if p["in"] in ("query", "path")} - {"tenant"}
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if content:
        ref = content["schema"]["$ref"].rsplit("/", 1)[-1]
        names |= set(spec["components"]["schemas"][ref]["properties"])
    return names


def rest_faces() -> dict[str, set[str]]:
    spec = published_openapi()
    base = "/t/{tenant}/v1"
    search = body_fields(spec, f"{base}/search", "post")
    return {
        "write": body_fields(spec, f"{base}/memories", "post"),
        "update": body_fields(spec, f"{base}/memories/{{memory_id}}", "patch"),
        "search": (search - {"filter"}) | FILTER,  # the filter is the MemoryFilter model itself
        "list": body_fields(spec, f"{base}/memories", "get"),
        "remember": body_fields(spec, f"{base}/remember", "post"),
        "timeline": body_fields(spec, f"{base}/memories/timeline", "get"),
    }


async def mcp_faces() -> dict[str, set[str]]:
    tools = {t.name: t for t in await build_mcp(lambda: None).list_tools()}  # type: ignore[arg-type, return-value]
    fields = {name: set(tool.input_schema["properties"]) for name, tool in tools.items()}
    return {
        "write": fields["write_memory"],
        "update": fields["update_memory"],
        "search": fields["search_memory"],
        "list": fields["list_memories"],
        "remember": fields["remember"],
    }


def cli_faces() -> dict[str, set[str]]:
    group = typer.main.get_command(cli_app)
    commands = group.commands  # type: ignore[attr-defined]
    fields = {
        name: {p.name for p in commands[name].params}
        for name in ("write", "update", "search", "list", "remember", "timeline")
    }
    return fields


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
async def test_every_face_takes_every_field_of_the_operation(operation):
    wanted = OPERATIONS[operation]
    faces = {"rest": rest_faces(), "mcp": await mcp_faces(), "cli": cli_faces()}
    for face, operations in faces.items():
        if (face, operation) in NOT_OFFERED:
            assert operation not in operations
            continue
        taken = canonical(operations[operation], wanted) - PLUMBING[face]
        missing = wanted - taken - (SET_BY_FACE if face != "rest" else set())
        extra = taken - wanted
        assert not missing, f"{face} {operation} lacks {sorted(missing)}"
        assert not extra, f"{face} {operation} takes fields no model has: {sorted(extra)}"


# A value for every filter, none of them the default.
EVERY_FILTER = {
    "types": ["event"],
    "kinds": ["turn"],
    "layers": ["session"],
    "statuses": ["forgotten"],
    "tags": ["home"],
    "pinned": False,
    "contains": "Paris",
    "session_id": "s-1",
    "task_id": "t-1",
    "created_after": datetime(2026, 1, 1, tzinfo=UTC),
    "created_before": datetime(2026, 2, 1, tzinfo=UTC),
    "occurred_after": datetime(2026, 1, 1, tzinfo=UTC),
    "occurred_before": datetime(2026, 2, 1, tzinfo=UTC),
    "current_only": True,
    "user_id": "alice",
    "own_only": True,
    "agent_id": "support-bot",
}


async def test_every_face_hands_every_filter_to_the_model():
    """The faces build their filter from their arguments by name (MemoryFilter.named): an option
    under a spelling the face does not map would be dropped without a word."""
    assert set(EVERY_FILTER) == FILTER
    commands = typer.main.get_command(cli_app).commands  # type: ignore[attr-defined]
    for command in ("list", "search", "timeline"):
        options = {p.name for p in commands[command].params}
        given = {o: EVERY_FILTER[SPELLINGS.get(o, o)] for o in options if SPELLINGS.get(o, o) in FILTER}
        assert MemoryFilter.named(given, FILTER_SPELLING).model_dump(include=FILTER) == EVERY_FILTER, command
    rest = {SPELLINGS.get(o, o): o for o in ("type", "kind", "layer", "tag")} | {"statuses": "status_"}
    arguments = {rest.get(field, field): value for field, value in EVERY_FILTER.items()}
    assert (await memory_filter(**arguments)).model_dump() == EVERY_FILTER
    assert MemoryFilter.named({"statuses": [], "tags": None, "query": "x"}) == MemoryFilter()  # absent: defaults
    mcp = await mcp_faces()  # MCP reads its arguments under the fields' own names
    for tool in ("search", "list"):
        assert {a for a in mcp[tool] if SPELLINGS.get(a, a) in FILTER} == FILTER, tool
