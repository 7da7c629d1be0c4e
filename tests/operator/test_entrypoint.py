"""`python -m engram_operator`, the chart's command, as a process: bad invocations exit 2 with a
message; a good one serves MemoryTenants and stops cleanly on SIGTERM."""

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import yaml

from tests.operator.harness import eventually
from tests.operator.test_operator import condition, name


def operator_process(*args: str, env: dict[str, str] | None = None, log: Path | None = None) -> subprocess.Popen:
    """The operator as a process. A long run logs to a file: a pipe nobody reads fills up and
    blocks the process's next write."""
    out = log.open("w") if log else subprocess.PIPE
    return subprocess.Popen(
        [sys.executable, "-m", "engram_operator", *args],
        env={**os.environ, **(env or {})},
        stdout=out,
        stderr=out,
        text=True,
    )


def test_bad_invocations_exit_2_with_a_message(tmp_path):
    no_scope = operator_process()
    assert no_scope.wait(30) == 2 and "--all-namespaces" in no_scope.stderr.read()
    config = tmp_path / "config.yaml"
    config.write_text("instances: [{name: pg, environment: staging, adminDsn: postgresql://x}]")
    bad = operator_process("-A", env={"ENGRAM_OPERATOR_CONFIG": str(config)})
    assert bad.wait(30) == 2 and "bad configuration" in bad.stderr.read()
    config.write_text("instances: [{name: pg, environment: test, adminDsnEnv: ENGRAM_NOT_SET}]")
    unset = operator_process("-A", env={"ENGRAM_OPERATOR_CONFIG": str(config)})
    assert unset.wait(30) == 2 and "ENGRAM_NOT_SET is not set" in unset.stderr.read()


async def test_the_operator_process_serves_tenants_and_stops_on_sigterm(emulator, cluster, bootstrapped, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"instances": [{"name": "pg-test", "environment": "test", "adminDsnEnv": "PG"}]}))
    log = tmp_path / "operator.log"
    env = {"ENGRAM_OPERATOR_CONFIG": str(config), "PG": bootstrapped}
    process = operator_process("--namespace", "agents", env=env, log=log)
    try:
        tenant = name()
        await cluster.apply_tenant("agents", tenant, {"environment": "test"})
        await eventually(lambda: condition(cluster.tenant("agents", tenant), "Provisioned").get("status") == "True")
    finally:
        process.send_signal(signal.SIGTERM)
        # Waited for in a thread: the emulator is served from this loop, and a blocked loop cannot
        # answer the requests the operator still has in flight while it stops.
        assert await asyncio.to_thread(process.wait, 60) == 0, log.read_text()[-3000:]
