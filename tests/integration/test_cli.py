"""The engram command line, run as a user would, against the real database."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, unique_tenant


@pytest.fixture(scope="module")
def cli_env(settings):
    return {
        **os.environ,
        "ENGRAM_DATABASE_URL": settings.database_url.get_secret_value(),
        "ENGRAM_ENVIRONMENT": "test",
    }


def engram(env, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engram", *args], env=env, capture_output=True, text=True, timeout=120)


def test_tenant_lifecycle_and_memories(cli_env):
    name = unique_tenant("cli")
    created = engram(cli_env, "tenant", "create", name)
    assert created.returncode == 0, created.stderr
    assert f"ek.{name}." in created.stdout and f"/t/{name}/mcp" in created.stdout
    assert name in engram(cli_env, "tenant", "list").stdout
    rotated = engram(cli_env, "tenant", "rotate-key", name)
    assert rotated.returncode == 0 and rotated.stdout.startswith(f"ek.{name}.")

    written = engram(cli_env, "write", "The user's flight is CA981", "--tenant", name, "--type", "event")
    assert written.returncode == 0, written.stderr
    memory_id = json.loads(written.stdout)["memory"]["id"]
    found = engram(cli_env, "search", "CA981", "--tenant", name, "--explain")
    result = json.loads(found.stdout)
    assert result["hits"][0]["memory"]["id"] == memory_id and result["explanation"]["query_identifiers"] == ["ca981"]
    forgotten = engram(cli_env, "forget", memory_id, "--tenant", name, "--reason", "done")
    assert json.loads(forgotten.stdout)["status"] == "forgotten"


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


def test_wrong_environment_exits_with_code_1(cli_env):
    result = engram({**cli_env, "ENGRAM_ENVIRONMENT": "prod"}, "tenant", "list")
    assert result.returncode == 1 and "refusing to start" in result.stderr


def test_eval_runs_our_own_sets_and_refuses_bad_input(cli_env, tmp_path):
    ran = engram(cli_env, "eval", "-b", "temporal", "--own-data", str(ROOT / "tests" / "data"), "--out", str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    assert "| engram |" in ran.stdout and (tmp_path / "results.json").is_file() and (tmp_path / "results.md").is_file()
    for bad in (["-b", "nope"], ["-b", "locomo", "--data-dir", str(tmp_path / "none")], ["--split", "nope"]):
        refused = engram(cli_env, "eval", *bad, "--out", str(tmp_path))
        assert refused.returncode == 2 and "error:" in refused.stderr, bad
