"""The benchmark scripts still run (tiny sizes; their figures are not checked here)."""

import os
import subprocess
import sys

from tests.conftest import ROOT


def test_bench_runs_end_to_end(settings):
    env = {**os.environ, "ENGRAM_DATABASE_URL": settings.database_url.get_secret_value()}
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--memories", "60", "--queries", "10"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "memories/s" in result.stdout and "search via MCP" in result.stdout
