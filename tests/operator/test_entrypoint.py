"""`python -m engram_operator`, the chart's command, as a process: bad invocations exit 2 with a
message; a good one serves MemoryTenants and stops cleanly on SIGTERM, within 10 s, even in the
middle of a reconciliation: waiting on the database, on a database that stopped answering, or
on the API server. What a stopped reconciliation left undone, the next start finishes."""

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import httpx
import yaml

from engram.domain.tenancy import schema_name
from engram_operator.provision import role_name, tenant_lock
from tests.conftest import free_port
from tests.operator.harness import Cluster, DatabaseLink, eventually
from tests.operator.test_operator import condition, name

# Kubernetes waits terminationGracePeriodSeconds (30 by default) before it kills a pod; the
# operator is asked to be gone well within that.
STOPS_WITHIN = 10


def operator_process(*args: str, env: dict[str, str] | None = None, log: Path | None = None) -> subprocess.Popen:
    """The operator as a process. A long run logs to a file: a pipe nobody reads fills up and
    blocks the process's next write."""
    out = log.open("a") if log else subprocess.PIPE
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


# Short, so that a test sees a crashed holder replaced within seconds.
ELECTION = {
    "namespace": "engram-system",
    "leaseDurationSeconds": 3,
    "renewDeadlineSeconds": 2,
    "retryPeriodSeconds": 0.5,
}


@contextlib.asynccontextmanager
async def running_operator(
    tmp_path: Path, dsn: str, drift_interval: float = 60, *extra: str, log: str = "operator.log"
) -> AsyncIterator[subprocess.Popen]:
    """The operator watching namespace `agents`, its one instance the test server at ``dsn``.
    Whatever happens in the test, the process does not outlive it."""
    config = tmp_path / "config.yaml"
    instances = [{"name": "pg-test", "environment": "test", "adminDsnEnv": "PG"}]
    settings = {"instances": instances, "driftIntervalSeconds": drift_interval, "leaderElection": ELECTION}
    config.write_text(yaml.safe_dump(settings))
    env = {"ENGRAM_OPERATOR_CONFIG": str(config), "PG": dsn}
    process = operator_process("--namespace", "agents", "--log-format", "plain", *extra, env=env, log=tmp_path / log)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)


async def stop(process: subprocess.Popen, tmp_path: Path, log: str = "operator.log") -> None:
    """SIGTERM; the process must exit 0 within STOPS_WITHIN seconds. Polled from this loop, which
    serves the emulator and must go on answering the stopping operator."""
    process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOPS_WITHIN
    while process.poll() is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    text = (tmp_path / log).read_text()[-3000:]
    assert process.poll() is not None, f"still running {STOPS_WITHIN} s after SIGTERM:\n{text}"
    assert process.returncode == 0, text


def provisioned(cluster: Cluster, tenant: str) -> bool:
    return condition(cluster.tenant("agents", tenant) or {}, "Provisioned").get("status") == "True"


async def test_the_operator_process_serves_tenants_and_stops_on_sigterm(emulator, cluster, bootstrapped, tmp_path):
    port = free_port()
    async with running_operator(tmp_path, bootstrapped, 60, "--metrics-port", str(port)) as process:
        tenant = name()
        await cluster.apply_tenant("agents", tenant, {"environment": "test"})
        await eventually(lambda: provisioned(cluster, tenant), what="the tenant provisioned")
        sample = f'engram_operator_reconcile_seconds_count{{namespace="agents",tenant="{tenant}",trigger="change"}}'
        async with httpx.AsyncClient() as client:
            scraped = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
        assert sample in scraped, scraped[-2000:]
        await stop(process, tmp_path)


def lease_holder(cluster: Cluster) -> str | None:
    lease = cluster.get("coordination.k8s.io/v1/leases", "engram-system", "engram-operator") or {}
    return (lease.get("spec") or {}).get("holderIdentity")


async def test_a_second_operator_waits_for_the_lease_and_takes_over_when_the_first_dies(
    emulator, cluster, bootstrapped, tmp_path
):
    def log(which: str) -> str:
        return (tmp_path / which).read_text()

    full = ("--log-format", "json")  # each line of a handler names its object
    async with running_operator(tmp_path, bootstrapped, 60, *full, log="first.log") as first:
        before = name()
        await cluster.apply_tenant("agents", before, {"environment": "test"})
        await eventually(lambda: provisioned(cluster, before), what="provisioned by the first operator")
        first_holder = lease_holder(cluster)
        async with running_operator(tmp_path, bootstrapped, 60, *full, log="second.log") as second:
            await eventually(lambda: "waiting for the lease" in log("second.log"), what="the second one waiting")
            during = name()
            await cluster.apply_tenant("agents", during, {"environment": "test"})
            await eventually(lambda: provisioned(cluster, during), what="provisioned while both run")
            await asyncio.sleep(2 * ELECTION["leaseDurationSeconds"])  # the second stays a candidate
            assert lease_holder(cluster) == first_holder and second.poll() is None
            assert during in log("first.log") and during not in log("second.log")

            first.kill()  # no clean stop: the lease is not handed back, it expires
            await eventually(lambda: "holding the lease" in log("second.log"), what="the second taking over")
            after = name()
            await cluster.apply_tenant("agents", after, {"environment": "test"})
            await eventually(lambda: provisioned(cluster, after), what="provisioned by the second operator")
            # kopf logs a handler's success after the status it wrote is visible: wait for the line.
            await eventually(lambda: after in log("second.log"), what="the second operator's handler log")
            assert lease_holder(cluster) not in (None, first_holder)

            # Someone else holds the lease now: the second operator stops acting and exits 1.
            await cluster.patch(
                "coordination.k8s.io/v1/leases",
                "engram-system",
                "engram-operator",
                {"spec": {"holderIdentity": "someone-else", "leaseDurationSeconds": 60}},
            )
            await eventually(lambda: second.poll() is not None, what="the second operator exiting")
            assert second.returncode == 1, log("second.log")[-2000:]


async def waiting_on_registry(conn: asyncpg.Connection) -> int:
    """Sessions waiting for a lock on the tenant registry."""
    return await conn.fetchval(
        "SELECT count(*) FROM pg_catalog.pg_locks WHERE NOT granted AND relation = 'engram_control.tenants'::regclass"
    )


async def nobody_waiting(conn: asyncpg.Connection) -> bool:
    return await waiting_on_registry(conn) == 0


async def waiting_on_a_tenant_lock(conn: asyncpg.Connection) -> int:
    """Sessions waiting for an advisory lock (a tenant's, held by this test)."""
    return await conn.fetchval("SELECT count(*) FROM pg_catalog.pg_locks WHERE NOT granted AND locktype = 'advisory'")


async def nobody_waiting_on_a_tenant_lock(conn: asyncpg.Connection) -> bool:
    return await waiting_on_a_tenant_lock(conn) == 0


async def left_behind(conn: asyncpg.Connection, tenant: str) -> dict[str, bool]:
    """What of the tenant exists in the database: its role, its schema, its registration."""
    return {
        "role": await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", role_name(tenant)),
        "schema": await conn.fetchval("SELECT to_regnamespace($1) IS NOT NULL", schema_name(tenant)),
        "registered": await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM engram_control.tenants WHERE name = $1)", tenant
        ),
    }


async def sigterm_while_registering(cluster: Cluster, bootstrapped: str, tmp_path: Path, *, unanswered: bool) -> None:
    """Provisioning's last step, the tenant's registration inside the transaction that made its role
    and schema, waits on a lock this test holds; then SIGTERM (with the database cut off first if
    ``unanswered``). The operator exits 0 within 10 s, the transaction leaves nothing behind, and the
    operator started again provisions the tenant."""
    tenant = name()
    admin = await asyncpg.connect(bootstrapped)
    try:
        async with DatabaseLink(bootstrapped) as link, admin.transaction():
            await admin.execute("LOCK TABLE engram_control.tenants IN SHARE MODE")
            async with running_operator(tmp_path, link.dsn) as process:
                await cluster.apply_tenant("agents", tenant, {"environment": "test"})
                await eventually(lambda: waiting_on_registry(admin), what="provisioning waiting on the lock")
                if unanswered:
                    link.freeze()
                await stop(process, tmp_path)
            if not unanswered:  # the operator had the server cancel the statement it was waiting in
                await eventually(lambda: nobody_waiting(admin), what="the waiting statement cancelled")
        # The lock is released and the relay closed: the server has ended the operator's session.
        await eventually(lambda: _nothing_of(admin, tenant), what="the interrupted provisioning rolled back as a whole")
        assert not provisioned(cluster, tenant)

        async with running_operator(tmp_path, bootstrapped) as process:
            await eventually(lambda: provisioned(cluster, tenant), what="the tenant provisioned after a restart")
            await stop(process, tmp_path)
        assert await left_behind(admin, tenant) == {"role": True, "schema": True, "registered": True}
    finally:
        await admin.close()


async def _nothing_of(conn: asyncpg.Connection, tenant: str) -> bool:
    return not any((await left_behind(conn, tenant)).values()) and await nobody_waiting(conn)


async def test_sigterm_while_provisioning_waits_on_the_database(emulator, cluster, bootstrapped, tmp_path):
    await sigterm_while_registering(cluster, bootstrapped, tmp_path, unanswered=False)


async def test_sigterm_while_the_database_does_not_answer(emulator, cluster, bootstrapped, tmp_path):
    await sigterm_while_registering(cluster, bootstrapped, tmp_path, unanswered=True)


async def test_sigterm_while_an_api_answer_is_slow(emulator, cluster, bootstrapped, tmp_path):
    """The API server takes its time over the first read of a reconciliation (the tenant's
    Secret); SIGTERM meanwhile. The call is dropped and the operator exits 0 within 10 s; started
    again, with the API server answering, it provisions the tenant."""
    holding, asked, release = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def slow_answer() -> None:
        asked.set()
        await release.wait()

    holding.set()
    emulator["get /api/v1/namespaces/agents/secrets/*", holding] << slow_answer
    tenant = name()
    try:
        async with running_operator(tmp_path, bootstrapped) as process:
            await cluster.apply_tenant("agents", tenant, {"environment": "test"})
            await eventually(asked.is_set, what="the operator reading the tenant's Secret")
            await stop(process, tmp_path)
    finally:
        holding.clear()
        release.set()
    assert not provisioned(cluster, tenant)
    async with running_operator(tmp_path, bootstrapped) as process:
        await eventually(lambda: provisioned(cluster, tenant), what="the tenant provisioned after a restart")
        await stop(process, tmp_path)


async def test_sigterm_during_a_drift_check(emulator, cluster, bootstrapped, tmp_path):
    """The periodic check of a provisioned tenant is in the database, waiting on a lock, when SIGTERM
    comes: kopf does not cancel a timer, it flags it; the check gives up and the operator exits 0
    within 10 s."""
    tenant = name()
    admin = await asyncpg.connect(bootstrapped)
    try:
        async with running_operator(tmp_path, bootstrapped, drift_interval=1) as process:
            await cluster.apply_tenant("agents", tenant, {"environment": "test"})
            await eventually(lambda: provisioned(cluster, tenant), what="the tenant provisioned")
            async with admin.transaction():
                await admin.execute("SELECT pg_advisory_xact_lock(hashtext($1))", tenant_lock(tenant))
                await eventually(lambda: waiting_on_a_tenant_lock(admin), what="a drift check waiting on the lock")
                await stop(process, tmp_path)
                await eventually(lambda: nobody_waiting_on_a_tenant_lock(admin), what="the waiting statement cancelled")
        assert await left_behind(admin, tenant) == {"role": True, "schema": True, "registered": True}
    finally:
        await admin.close()
