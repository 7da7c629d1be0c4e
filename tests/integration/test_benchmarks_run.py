"""The benchmark scripts still run (tiny sizes; their figures are not checked here)."""

import importlib.util
import os
import subprocess
import sys

import pytest

from benchmarks import realistic
from tests.conftest import ROOT


@pytest.mark.skipif(realistic.missing(ROOT / realistic.DATA) is not None, reason="no evaluation sets at ../shared/data")
def test_bench_runs_end_to_end(settings):
    env = {**os.environ, "ENGRAM_DATABASE_URL": settings.database_url.get_secret_value()}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.bench",
            "--scales",
            "300",
            "--tenants",
            "3",
            "--per-tenant",
            "20",
            "--batched",
            "200",
            "--queries",
            "10",
            "--baseline",
            "0",
            "--peers",
            "30",
            "--load-seconds",
            "0.5",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "memories/s" in result.stdout and "search via MCP" in result.stdout
    assert "| search via REST, 300 memories |" in result.stdout and "3 tenants" in result.stdout
    assert "write chat turns, Chinese, batches of 100" in result.stdout
    assert "300 memories, open loop, 200 requests/s" in result.stdout
    if importlib.util.find_spec("mem0") is None:  # the optional `peers` extra
        assert "mem0: skipped (not installed" in result.stdout
    else:
        assert "| mem0 search |" in result.stdout and "| ratio engram / mem0 |" in result.stdout
