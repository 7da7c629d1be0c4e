"""The engram command line, run as a user would, against the real database."""

import base64
import json
import os
import pty
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import ROOT, unique_tenant


@pytest.fixture(scope="module")
def cli_env(settings):
    return {
        **os.environ,
        "ENGRAM_DATABASE_URL": settings.database_url.get_secret_value(),
        "ENGRAM_ENVIRONMENT": "test",
    }


def engram(env, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engram", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def test_tenant_lifecycle_and_memories(cli_env):
    name = unique_tenant("cli")
    created = engram(cli_env, "tenant", "create", name)
    assert created.returncode == 0, created.stderr
    assert f"ek.{name}." in created.stdout and f"/t/{name}/mcp" in created.stdout
    assert name in engram(cli_env, "tenant", "list").stdout
    rotated = engram(cli_env, "tenant", "rotate-key", name)
    assert rotated.returncode == 0 and rotated.stdout.startswith(f"ek.{name}.")

    written = engram(cli_env, "write", "The user's flight is CA981", "--tenant", name, "--type", "event", "--json")
    assert written.returncode == 0, written.stderr
    memory_id = json.loads(written.stdout)["memory"]["id"]
    found = engram(cli_env, "search", "CA981", "--tenant", name, "--explain")
    result = json.loads(found.stdout)
    assert result["hits"][0]["memory"]["id"] == memory_id and result["explanation"]["query_identifiers"] == ["ca981"]
    forgotten = engram(cli_env, "forget", memory_id, "--tenant", name, "--reason", "done", "--json")
    assert json.loads(forgotten.stdout)["status"] == "forgotten"


def test_people_get_tables_and_scripts_get_json(cli_env):
    """Every memory command: a table or card by default, the REST API's JSON with --json; search
    takes the configured top_k, filters and --now; list, get, history, restore and purge exist."""
    name = unique_tenant("cli")
    assert engram(cli_env, "tenant", "create", name).returncode == 0
    t = ("--tenant", name)
    for content in ("I live in Berlin", "I moved to Paris, I live in Paris now"):
        assert engram(cli_env, "write", content, *t, "--tag", "home").returncode == 0
    for i in range(7):
        engram(cli_env, "write", f"The user visited museum number {i} in Paris", *t)

    table = engram(cli_env, "search", "where does the user live", *t)
    assert table.returncode == 0 and "score" in table.stdout and "The user moved to Paris" in table.stdout
    assert not table.stdout.lstrip().startswith("{")
    as_json = json.loads(engram(cli_env, "search", "Paris", *t, "--json").stdout)
    assert len(as_json["hits"]) == 5  # ENGRAM_RETRIEVAL__DEFAULT_TOP_K's default, not a CLI constant
    wider = engram({**cli_env, "ENGRAM_RETRIEVAL__DEFAULT_TOP_K": "8"}, "search", "Paris", *t, "--json")
    assert len(json.loads(wider.stdout)["hits"]) == 8
    tagged = json.loads(engram(cli_env, "search", "Paris", *t, "--tag", "home", "--json").stdout)
    assert [h["memory"]["content"] for h in tagged["hits"]] == ["The user moved to Paris, the user lives in Paris now"]
    dated = engram(cli_env, "search", "what did I do last week", *t, "--now", "2020-01-01T00:00:00Z", "--json")
    assert json.loads(dated.stdout)["hits"] == []  # nothing happened the week before that --now
    nothing = engram(cli_env, "search", "museum", *t, "--type", "task")
    assert nothing.returncode == 0 and "no memory matches" in nothing.stdout

    page = json.loads(engram(cli_env, "list", *t, "--status", "superseded", "--json").stdout)
    (old,) = page["items"]
    assert old["content"] == "The user lives in Berlin"
    listed = engram(cli_env, "list", *t, "--tag", "home", "--status", "superseded", "--status", "active")
    both = ("--status", "superseded", "--status", "active")
    berlin = json.loads(engram(cli_env, "list", *t, "--contains", "BERLIN", *both, "--json").stdout)
    assert [m["content"] for m in berlin["items"]] == ["The user lives in Berlin"]
    drawn = json.loads(engram(cli_env, "timeline", *t, *both, "--json").stdout)
    assert drawn["bucket"] == "day" and drawn["total"] == sum(sum(p["counts"].values()) for p in drawn["points"]) > 1
    assert "memories by day" in engram(cli_env, "timeline", *t).stdout
    assert "The user lives in Berlin" in listed.stdout and "superseded" in listed.stdout
    card = engram(cli_env, "get", old["id"], *t)
    assert "The user lives in Berlin" in card.stdout and f"superseded by {old['superseded_by']}" in card.stdout
    history = engram(cli_env, "history", old["id"], *t)
    assert "written" in history.stdout and "superseded" in history.stdout
    events = json.loads(engram(cli_env, "history", old["id"], *t, "--json").stdout)
    assert [e["event"] for e in events] == ["written", "superseded"]

    current = old["superseded_by"]
    engram(cli_env, "forget", current, *t)
    restored = json.loads(engram(cli_env, "restore", current, *t, "--json").stdout)
    assert restored["status"] == "active"
    refused = engram(cli_env, "purge", current, *t, "--yes")
    assert refused.returncode == 2 and "forget" in refused.stderr  # only a forgotten memory is purged
    engram(cli_env, "forget", current, *t)
    unconfirmed = subprocess.run(
        [sys.executable, "-m", "engram", "purge", current, *t], env=cli_env, input="n\n", capture_output=True, text=True
    )
    assert unconfirmed.returncode == 1 and json.loads(engram(cli_env, "get", current, *t, "--json").stdout)
    purged = engram(cli_env, "purge", current, *t, "--yes")
    assert purged.returncode == 0 and f"purged {current}" in purged.stdout
    gone = engram(cli_env, "get", current, *t)
    assert gone.returncode == 2 and "not found" in gone.stderr


def test_migrate_is_idempotent(cli_env):
    first = engram(cli_env, "migrate")
    assert first.returncode == 0, first.stderr
    assert "control: up to date" in first.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("tenant", "create", "Bad_Name"),
        ("write", "x", "--tenant", "no-such-tenant"),
        ("forget", "not-an-id", "--tenant", "whatever"),
        ("search", "x", "--tenant", "whatever", "--top-k", "0"),
        ("write", "x", "--tenant", "whatever", "--importance", "3"),
    ],
)
def test_bad_input_exits_with_code_2(cli_env, args):
    result = engram(cli_env, *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.strip()


def test_a_made_up_cursor_or_an_instant_out_of_range_exits_with_code_2(cli_env):
    name = unique_tenant("cli-cursor")
    assert engram(cli_env, "tenant", "create", name).returncode == 0
    for created in ("10000-01-01", "0002-01-01T00:00:00+23:59", "-1"):
        cursor = base64.urlsafe_b64encode(f"{created}|{uuid.UUID(int=0)}".encode()).decode()
        listed = engram(cli_env, "list", "--tenant", name, "--cursor", cursor)
        assert listed.returncode == 2 and "cursor" in listed.stderr, (listed.stdout, listed.stderr)
    late = engram(cli_env, "search", "tea", "--tenant", name, "--now", "0001-12-31T23:00:00")
    assert late.returncode == 2 and "now" in late.stderr, (late.stdout, late.stderr)


def test_wrong_environment_exits_with_code_2(cli_env):
    result = engram({**cli_env, "ENGRAM_ENVIRONMENT": "prod"}, "tenant", "list")
    assert result.returncode == 2 and "refusing to start" in result.stderr


@pytest.mark.parametrize(
    ("env", "args", "says"),
    [
        ({"ENGRAM_PORT": "abc"}, ("tenant", "list"), "bad configuration: ENGRAM_PORT"),
        ({"ENGRAM_RETRIEVAL__CANDIDATES": "0"}, ("tenant", "list"), "ENGRAM_RETRIEVAL__CANDIDATES"),
        ({"ENGRAM_DATABASE_URL": "postgresql://u:p@127.0.0.1:1/db"}, ("tenant", "list"), "cannot reach the database"),
        ({}, ("reindex", "-t", "{tenant}", "--model", "nosuch"), "unknown embedding model 'nosuch'"),
    ],
)
def test_configuration_and_outages_are_one_line_and_exit_2(cli_env, env, args, says):
    tenant = unique_tenant("cli")
    assert engram(cli_env, "tenant", "create", tenant).returncode == 0
    result = engram({**cli_env, **env}, *(arg.format(tenant=tenant) for arg in args))
    assert result.returncode == 2 and result.stderr.startswith("error: ") and says in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not result.stdout


async def test_the_embedded_database_is_one_from_any_directory():
    """`engram mcp` started by a desktop agent in any directory reaches the database `make run`
    uses (created, migrated and given a default tenant on first use), on the same port each start."""
    root = Path(tempfile.mkdtemp(prefix="engram-anywhere-"))
    root.chmod(0o755)  # the embedded server's user must reach the state directory
    state, elsewhere, other = root / "state", root / "a", root / "b"
    for folder in (state, elsewhere, other):
        folder.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")} | {"ENGRAM_STATE_DIR": str(state)}

    def stdio(cwd) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable, args=["-m", "engram", "mcp", "-t", "default"], env=env, cwd=cwd
        )

    try:
        async with Client(stdio(elsewhere)) as client:
            written = await client.call_tool("write_memory", {"content": "The user's locker code is 4471"})
            assert written.structured_content["outcome"] == "created", written
        async with Client(stdio(other)) as client:
            found = await client.call_tool("search_memory", {"query": "locker code"})
            assert found.structured_content["hits"][0]["content"] == "The user's locker code is 4471"
        assert not (elsewhere / ".state").exists() and not (other / ".state").exists()

        first = engram(env, "db", "start")
        engram(env, "db", "stop")
        again = engram(env, "db", "start")
        assert first.returncode == 0 and first.stdout == again.stdout  # the same URL, port included
    finally:
        engram(env, "db", "stop")
        shutil.rmtree(root, ignore_errors=True)


def test_eval_runs_our_own_sets_and_refuses_bad_input(cli_env, tmp_path):
    ran = engram(cli_env, "eval", "-b", "temporal", "--own-data", str(ROOT / "tests" / "data"), "--out", str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    assert "| engram |" in ran.stdout and (tmp_path / "results.json").is_file() and (tmp_path / "results.md").is_file()
    # A fresh clone has no ../shared/data: one line says so, and engram's own sets run.
    alone = engram(
        cli_env, "eval", "--no-channels", "--data-dir", str(tmp_path / "none"), "--out", str(tmp_path), timeout=900
    )
    assert alone.returncode == 0, alone.stderr
    assert f"no public benchmarks at {tmp_path / 'none'}" in alone.stderr and "Traceback" not in alone.stderr
    assert all(f"### {name}, test split" in alone.stdout for name in ("crosslingual", "temporal", "paraphrase")), (
        alone.stdout
    )
    assert "locomo" not in alone.stdout
    for bad in (["-b", "nope"], ["-b", "locomo", "--data-dir", str(tmp_path / "none")], ["--split", "nope"]):
        refused = engram(cli_env, "eval", *bad, "--out", str(tmp_path))
        assert refused.returncode == 2 and "error:" in refused.stderr, bad


def at_a_terminal(env, *args: str) -> str:
    """The command's output as a person at a terminal sees it (its stdout a pseudo-terminal)."""
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "engram", *args],
            env={**env, "COLUMNS": "120"},
            stdout=follower,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all is read
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert done.returncode == 0, done.stderr
        return b"".join(chunks).decode()
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)


def test_the_tenant_comes_from_engram_tenant_and_lists_read_as_tables(cli_env, tmp_path):
    name = unique_tenant("cli")
    assert engram(cli_env, "tenant", "create", name).returncode == 0
    mine = {**cli_env, "ENGRAM_TENANT": name}
    written = engram(mine, "write", "The user's locker is number 12", "--json")  # no --tenant
    assert written.returncode == 0, written.stderr
    assert engram(cli_env, "list", "-t", name, "--json").stdout.count("locker is number 12") == 1

    listed = engram(cli_env, "tenant", "list")
    header = listed.stdout.splitlines()[0].split()
    assert header[:2] == ["name", "schema"] and "managed" in header
    assert any(line.split()[0] == name for line in listed.stdout.splitlines()[1:])
    tenants = json.loads(engram(cli_env, "tenant", "list", "--json").stdout)["tenants"]
    assert {"name", "schema_name", "created_at", "managed_by"} <= set(next(t for t in tenants if t["name"] == name))

    exported = tmp_path / "export.jsonl"
    assert engram(cli_env, "export", "-t", name, "-o", str(exported)).returncode == 0
    target = unique_tenant("cli")
    assert engram(cli_env, "tenant", "create", target).returncode == 0
    shown = at_a_terminal(cli_env, "import", str(exported), "-t", target)
    assert "imported" in shown and "{" not in shown  # a table, not JSON
    piped = json.loads(engram(cli_env, "import", str(exported), "-t", target).stdout)  # a script gets JSON
    assert piped["already_present"] == 1


def test_help_wraps_whole_phrases():
    """Each command's summary is one paragraph the help table wraps, not the source's line breaks."""
    shown = subprocess.run(
        [sys.executable, "-m", "engram", "--help"],
        env={**os.environ, "COLUMNS": "400"},
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert "and the older memories it may update (pass one to --replaces to retire it)" in shown
