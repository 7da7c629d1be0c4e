"""Export and import through REST and the CLI, against the real service and database."""

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from uuid import UUID

import httpx
import pytest

from tests.conftest import unique_tenant
from tests.integration.test_cli import cli_env  # noqa: F401 - the fixture
from tests.integration.test_cli import engram as run_cli

MEM0 = {
    "results": [
        {
            "id": "m-1",
            "memory": "Likes hiking in the Alps",
            "metadata": {"channel": "chat"},
            "categories": ["hobbies"],
            "created_at": "2025-01-02T10:00:00-08:00",
            "user_id": "alice",
        },
        {"id": "m-2", "memory": "Is allergic to peanuts", "metadata": None, "user_id": "alice"},
    ]
}
GRAPH = [
    {"type": "entity", "name": "John_Smith", "entityType": "person", "observations": ["Speaks fluent Spanish"]},
    {"type": "entity", "name": "Anthropic", "entityType": "organization", "observations": []},
    {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"},
]


@pytest.fixture
async def two(service, engram):
    """Clients of two fresh tenants: (client, base path) each."""
    out = []
    async with httpx.AsyncClient(base_url=service.url, timeout=60) as plain:
        for _ in range(2):
            name = unique_tenant("xfer")
            _, key = await engram.tenants.create(name)
            plain.headers["Authorization"] = f"Bearer {key}"
            out.append(
                (httpx.AsyncClient(base_url=service.url, headers=dict(plain.headers), timeout=60), f"/t/{name}/v1")
            )
    yield out
    for client, _ in out:
        await client.aclose()


def ndjson(records) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def lines(response: httpx.Response) -> list[dict]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines()]


async def fill(client, base) -> dict[str, str]:
    """A tenant with a superseded fact, a forgotten one, a pinned Chinese one and a turn."""
    old = (await client.post(f"{base}/memories", json={"content": "I live in Berlin"})).json()["memory"]
    new = (await client.post(f"{base}/memories", json={"content": "I moved to Paris, I live in Paris now"})).json()
    assert new["outcome"] == "superseded"
    gone = (await client.post(f"{base}/memories", json={"content": "My dog is called Rex"})).json()["memory"]
    await client.post(f"{base}/memories/{gone['id']}/forget", json={"reason": "asked"})
    tea = {"content": "我喜欢喝乌龙茶", "type": "preference", "pinned": True, "tags": ["drinks"]}
    pinned = (await client.post(f"{base}/memories", json=tea)).json()["memory"]
    turn = {
        "content": "assistant: see you at 5",
        "kind": "turn",
        "session_id": "s1",
        "occurred_at": "2026-01-02T17:00:00Z",
    }
    await client.post(f"{base}/memories", json=turn)
    return {"old": old["id"], "new": new["memory"]["id"], "gone": gone["id"], "pinned": pinned["id"]}


async def test_export_then_import_brings_back_the_same_memories_and_history(two):
    (source, a), (target, b) = two
    ids = await fill(source, a)
    exported = lines(await source.get(f"{a}/export"))
    header, body, end = exported[0], exported[1:-1], exported[-1]
    assert header["engram"] == "memories" and header["version"] == 1
    assert end == {"end": {"memories": 5}} and len(body) == 5
    by_id = {r["memory"]["id"]: r for r in body}
    assert by_id[ids["old"]]["memory"]["status"] == "superseded"
    assert by_id[ids["old"]]["memory"]["superseded_by"] == ids["new"]
    assert by_id[ids["gone"]]["memory"]["status"] == "forgotten"
    assert [e["event"] for e in by_id[ids["gone"]]["history"]] == ["written", "forgotten"]

    imported = await target.post(f"{b}/import", content=ndjson(exported))
    assert imported.status_code == 200, imported.text
    assert imported.json() | {"outcomes": {}} == {
        "format": "engram",
        "read": 5,
        "imported": 5,
        "already_present": 0,
        "erased": 0,
        "duplicates": 0,
        "links": 1,
        "outcomes": {},
    }
    again = lines(await target.get(f"{b}/export"))
    assert again[1:] == exported[1:]  # ids, states, times, links and history, all as they were

    # Searchable in the target: the vectors were made again there.
    found = (await target.post(f"{b}/search", json={"query": "oolong tea"})).json()["hits"]
    assert found[0]["memory"]["id"] == ids["pinned"]
    assert (await target.get(f"{b}/memories/{ids['old']}/versions")).json()[-1]["id"] == ids["new"]
    assert (await target.post(f"{b}/memories/{ids['gone']}/restore")).json()["status"] == "active"

    # Importing again adds nothing, not even history.
    repeat = (await target.post(f"{b}/import", content=ndjson(exported))).json()
    assert (repeat["imported"], repeat["already_present"], repeat["links"]) == (0, 5, 0)
    history = (await target.get(f"{b}/memories/{ids['old']}/history")).json()
    assert [e["event"] for e in history] == ["written", "superseded"]


async def test_an_export_cut_short_is_refused_and_the_whole_file_completes_it(two):
    (source, a), (target, b) = two
    ids = await fill(source, a)
    exported = lines(await source.get(f"{a}/export"))
    # The successor comes after the memory it replaced: a cut between them leaves the link pending.
    cut = next(i for i, r in enumerate(exported) if r.get("memory", {}).get("id") == ids["new"])
    partial = await target.post(f"{b}/import", content=ndjson(exported[:cut]))
    assert partial.status_code == 422 and "cut short" in partial.json()["error"]["message"]
    old = (await target.get(f"{b}/memories/{ids['old']}")).json()
    assert old["status"] == "superseded" and old["superseded_by"] is None
    whole = (await target.post(f"{b}/import", content=ndjson(exported))).json()
    assert (whole["imported"], whole["already_present"], whole["links"]) == (5 - (cut - 1), cut - 1, 1)
    assert (await target.get(f"{b}/memories/{ids['old']}")).json()["superseded_by"] == ids["new"]


async def test_an_active_memory_whose_fact_the_tenant_holds_is_a_duplicate(two):
    (source, a), (target, b) = two
    await source.post(f"{a}/memories", json={"content": "Prefers window seats"})
    await target.post(f"{b}/memories", json={"content": "Prefers window seats"})
    summary = (await target.post(f"{b}/import", content=(await source.get(f"{a}/export")).content)).json()
    assert (summary["imported"], summary["duplicates"]) == (0, 1)
    assert (await target.get(f"{b}/stats")).json()["by_status"]["active"] == 1


async def test_mem0_and_mcp_memory_exports_become_memories_once(two):
    (client, base), _ = two
    first = (await client.post(f"{base}/import", content=json.dumps(MEM0, indent=2).encode())).json()
    assert (first["format"], first["read"], first["imported"]) == ("mem0", 2, 2)
    graph = (await client.post(f"{base}/import", content=ndjson(GRAPH))).json()
    assert (graph["format"], graph["read"], graph["imported"]) == ("mcp-memory", 2, 2)
    for body in (json.dumps(MEM0).encode(), ndjson(GRAPH)):
        repeat = (await client.post(f"{base}/import", content=body)).json()
        assert repeat["imported"] == 0 and repeat["already_present"] == repeat["read"]

    hits = (await client.post(f"{base}/search", json={"query": "who works at Anthropic?"})).json()["hits"]
    assert hits[0]["memory"]["content"] == "John_Smith works at Anthropic"
    listed = (await client.get(f"{base}/memories", params={"tag": "hobbies"})).json()["items"]
    assert [m["content"] for m in listed] == ["Likes hiking in the Alps"]
    assert listed[0]["metadata"]["mem0"]["user_id"] == "alice" and listed[0]["source"] == "mem0"
    # It keeps the time mem0 stored it: the timeline and "in January" see it then, not today.
    assert datetime.fromisoformat(listed[0]["created_at"]) == datetime(2025, 1, 2, 18, tzinfo=UTC)
    assert datetime.fromisoformat(listed[0]["updated_at"]) == datetime(2025, 1, 2, 18, tzinfo=UTC)
    undated = (await client.get(f"{base}/memories", params={"contains": "peanuts"})).json()["items"][0]
    assert datetime.fromisoformat(undated["created_at"]) > datetime.now(UTC) - timedelta(hours=1)
    timeline = (await client.get(f"{base}/memories/timeline", params={"bucket": "month"})).json()
    assert any(p["start"].startswith("2025-01") and sum(p["counts"].values()) == 1 for p in timeline["points"])
    then = {"query": "what did I tell you in January 2025?", "now": "2025-06-01T00:00:00Z"}
    said_then = (await client.post(f"{base}/search", json=then)).json()["hits"]
    assert [h["memory"]["content"] for h in said_then] == ["Likes hiking in the Alps"]


@pytest.mark.parametrize(
    ("body", "format", "message"),
    [
        (b"", None, "empty"),
        (b'{"foo": 1}\n', None, "cannot tell the file's format"),
        (b"not json at all\n", None, "line 1: not JSON"),
        (b'{"type": "entity", "name": "x", "observations": ["a"]}\n[1]\n', None, "line 2: expected a JSON object"),
        (b'{"type": "entity", "name": "x", "observations": ["a"]}\n\xff\xfe\n', None, "line 2: not UTF-8"),
        (b'{"engram": "memories", "version": 9}\n', None, "version 9"),
        (b'{"type": "entity", "name": "x", "observations": ["a"]}\n', "mem0", "needs a non-empty 'memory'"),
        (b'{"memory": "   "}\n', None, "needs a non-empty 'memory'"),
    ],
)
async def test_bad_files_get_a_clear_422_and_change_nothing(two, body, format, message):
    (client, base), _ = two
    params = {"format": format} if format else {}
    response = await client.post(f"{base}/import", content=body, params=params)
    assert response.status_code == 422, response.text
    assert message in response.json()["error"]["message"]
    assert (await client.get(f"{base}/stats")).json()["by_status"].get("active", 0) == 0


async def test_a_bad_memory_line_names_its_line(two):
    (source, a), (target, b) = two
    await fill(source, a)
    exported = lines(await source.get(f"{a}/export"))
    exported[2]["memory"]["status"] = "lost"
    response = await target.post(f"{b}/import", content=ndjson(exported))
    assert response.status_code == 422 and response.json()["error"]["message"].startswith("line 3: memory.status")


def test_cli_export_and_import(cli_env, tmp_path):  # noqa: F811 - the imported fixture
    source, target = unique_tenant("cli-x"), unique_tenant("cli-y")
    for name in (source, target):
        assert run_cli(cli_env, "tenant", "create", name).returncode == 0
    assert run_cli(cli_env, "write", "The user's flight is CA981", "-t", source).returncode == 0
    out = tmp_path / "x.jsonl"
    with out.open("w") as stream:  # `engram export -t X > x.jsonl`, as the README says
        exported = subprocess.run(
            [sys.executable, "-m", "engram", "export", "-t", source], env=cli_env, stdout=stream, stderr=subprocess.PIPE
        )
    assert exported.returncode == 0 and b"exported 1 memories" in exported.stderr
    assert len(out.read_text().splitlines()) == 3
    imported = run_cli(cli_env, "import", str(out), "-t", target)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["imported"] == 1
    from_stdin = subprocess.run(
        [sys.executable, "-m", "engram", "import", "-", "-t", target],
        env=cli_env,
        input=out.read_text(),
        capture_output=True,
        text=True,
    )
    assert json.loads(from_stdin.stdout)["already_present"] == 1
    missing = run_cli(cli_env, "import", str(tmp_path / "nope.jsonl"), "-t", target)
    assert missing.returncode == 2 and "no file at" in missing.stderr
    bad = run_cli(cli_env, "import", str(out), "-t", target, "--format", "nonsense")
    assert bad.returncode == 2


async def test_pages_and_batches_stream_across_their_bounds(two, engram, monkeypatch):
    """Export pages and import batches far smaller than the tenant: nothing lost or repeated, and a
    link whose successor arrives in a later batch is still set."""
    from engram.services.transfer import TransferService
    from engram.store import transfer as store

    (source, a), _ = two
    ids = await fill(source, a)
    for i in range(4):
        await source.post(f"{a}/memories", json={"content": f"Visited city number {i} in {2000 + i}"})
    monkeypatch.setattr(store, "PAGE", 2)
    exported = lines(await source.get(f"{a}/export"))
    assert len(exported) == 11 and len({r["memory"]["id"] for r in exported[1:-1]}) == 9

    name = unique_tenant("xfer-small")
    ctx, _ = await engram.tenants.create(name)
    small = TransferService(engram.pool, engram.embedders, engram.writes, engram.access, max_batch=2)

    async def feed():
        for record in exported:
            yield json.dumps(record) + "\n"

    seen: list[int] = []
    summary = await small.import_lines(ctx, feed(), progress=seen.append)
    assert (summary.imported, summary.links) == (9, 1) and seen == [2, 4, 6, 8, 9]
    old = await engram.memories.get(ctx, UUID(ids["old"]))
    assert str(old.superseded_by) == ids["new"]


async def test_a_memory_already_present_is_left_as_it_is(two):
    """A newer export says A was superseded by B; the target already holds A (from an older export):
    A is skipped as already present, and its supersession link is not set either."""
    (source, src), (target, dst) = two
    a = (await source.post(f"{src}/memories", json={"content": "The user lives in Lyon"})).json()["memory"]
    older = (await source.get(f"{src}/export")).content
    assert (await target.post(f"{dst}/import", content=older)).json()["imported"] == 1
    await source.post(f"{src}/memories", json={"content": "The user moved to Nantes", "replaces": [a["id"]]})
    newer = (await source.get(f"{src}/export")).content
    summary = (await target.post(f"{dst}/import", content=newer)).json()
    assert (summary["imported"], summary["already_present"], summary["links"]) == (1, 1, 0)
    kept = (await target.get(f"{dst}/memories/{a['id']}")).json()
    assert (kept["status"], kept["superseded_by"]) == ("active", None)
