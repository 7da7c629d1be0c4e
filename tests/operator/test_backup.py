"""A tenant's backup and its restore into a new tenant, end to end on the suite's PostgreSQL: the
backup job's own script (as the CronJob renders it) runs with the bundled pg_dump as the tenant's
role, keeps the newest dumps, and `engram tenant restore` loads one into a new, empty tenant,
whose service then finds the memories and their history, while the old tenant's key opens nothing."""

import os
import secrets
import subprocess
import sys
import time
import uuid
from pathlib import Path

import asyncpg
import pytest

from engram.domain.models import NewMemory
from engram.domain.search import SearchRequest
from engram.errors import Unauthorized
from engram.runtime import engram_session
from engram.settings import Settings
from engram.store.embedded import client_program
from engram_operator.manifests import TenantView, render_backup_cronjob
from engram_operator.provision import Claim, ensure_tenant

MODEL, DIM = "use-multilingual-v3", 512


def name() -> str:
    return f"bk-{uuid.uuid4().hex[:8]}"


async def provision(instance, tenant: str, model: str = MODEL, dim: int = DIM):
    key = f"ek.{tenant}.{secrets.token_hex(8)}"
    claim = Claim(f"k8s:cluster-a/agents/{tenant}")
    return await ensure_tenant(instance, tenant, model, dim, secrets.token_urlsafe(16), key, claim), key


def backup_job(tenant: str, directory: Path, dsn: str, keep: int) -> subprocess.CompletedProcess:
    """The CronJob's container command, run here with the bundled PostgreSQL client programs."""
    view = TenantView(
        name=tenant,
        namespace="agents",
        environment="test",
        image="engram:test",
        spec={"backup": {"enabled": True, "persistentVolumeClaim": "backups", "keep": keep}},
    )
    container = render_backup_cronjob(view)["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    pg_dump = client_program("pg_dump")
    assert pg_dump is not None
    env = {**os.environ, "DATABASE_URL": dsn, "BACKUP_DIR": str(directory)}
    env["PATH"] = f"{Path(pg_dump).parent}:{env['PATH']}"
    return subprocess.run(container["command"], env=env, capture_output=True, text=True, timeout=120)


def restore(tenant: str, dump: Path, admin_dsn: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ENGRAM_DATABASE_URL": admin_dsn, "ENGRAM_ENVIRONMENT": "test"}
    return subprocess.run(
        [sys.executable, "-m", "engram", "tenant", "restore", tenant, str(dump)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


async def test_a_backup_restores_into_a_new_tenant_with_its_history_but_not_its_keys(
    test_instance, bootstrapped, tmp_path
):
    source, target = name(), name()
    (old, old_key), (new, new_key) = await provision(test_instance, source), await provision(test_instance, target)
    async with engram_session(Settings(database_url=old.dsn, environment="test", tenant=source), old.dsn) as engram:
        ctx = await engram.tenants.authenticate(source, old_key)
        await engram.writes.write(ctx, NewMemory(content="The user lives in Berlin"))
        moved = await engram.writes.write(ctx, NewMemory(content="The user moved to Munich last spring"))
        await engram.writes.write(ctx, NewMemory(content="用户偏好顺丰快递"))
        history = await engram.memories.history(ctx, moved.memory.id)

    # What an earlier run stopped half-way left: cleared by the next run.
    (tmp_path / source).mkdir()
    stale = tmp_path / source / ".partial-20261201T023000Z"
    stale.write_bytes(b"half a dump")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    # Three runs keeping two: the oldest dump goes.
    for _ in range(3):
        done = backup_job(source, tmp_path, old.dsn, keep=2)
        assert done.returncode == 0, done.stderr
        time.sleep(1.1)  # the dumps are named by the second
    dumps = sorted((tmp_path / source).glob(f"{source}-*.dump"))
    assert len(dumps) == 2 and not list((tmp_path / source).glob(".partial-*"))

    # A dump cut short (a full disk, a copy interrupted) fails as a whole: the target stays empty.
    cut = tmp_path / "cut.dump"
    cut.write_bytes(dumps[-1].read_bytes()[: dumps[-1].stat().st_size * 2 // 3])
    failed = restore(target, cut, bootstrapped)
    assert failed.returncode == 2, failed.stderr

    # Vectors of another model are refused: another dimension, or the same dimension by another name.
    mismatches = {
        ("litellm:openai/text-embedding-3-small", 1536): "do not fit",
        ("litellm:openai/other-512", DIM): "same embedding model",
    }
    for (model, dim), reason in mismatches.items():
        other = name()
        await provision(test_instance, other, model, dim)
        refused = restore(other, dumps[-1], bootstrapped)
        assert refused.returncode == 2 and reason in refused.stderr, refused.stderr

    restored = restore(target, dumps[-1], bootstrapped)
    assert restored.returncode == 0, restored.stderr
    assert "memories: 3 rows" in restored.stdout

    async with engram_session(Settings(database_url=new.dsn, environment="test", tenant=target), new.dsn) as engram:
        ctx = await engram.tenants.authenticate(target, new_key)
        hits = (await engram.search.search(ctx, SearchRequest(query="Where does the user live now?"))).hits
        assert hits and "Munich" in hits[0].memory.content
        assert (await engram.search.search(ctx, SearchRequest(query="快递"))).hits
        assert [e.model_dump(exclude={"memory_id"}) for e in await engram.memories.history(ctx, moved.memory.id)] == [
            e.model_dump(exclude={"memory_id"}) for e in history
        ]
        with pytest.raises(Unauthorized):
            await engram.tenants.authenticate(target, old_key)  # the old tenant's key opens nothing here
        # The restored tenant writes on: its sequences went on from the dump's.
        await engram.writes.write(ctx, NewMemory(content="The user's dog is called Bruno"))

    again = restore(target, dumps[-1], bootstrapped)
    assert again.returncode == 2 and "already holds memories" in again.stderr


async def test_a_file_that_is_no_dump_is_refused_with_exit_2_and_nothing_changes(test_instance, bootstrapped, tmp_path):
    tenant = name()
    provisioned, _ = await provision(test_instance, tenant)
    bogus = tmp_path / "not-a.dump"
    bogus.write_text("hello")
    refused = restore(tenant, bogus, bootstrapped)
    assert refused.returncode == 2 and "pg_restore could not read" in refused.stderr, refused.stderr
    missing = restore(tenant, tmp_path / "missing.dump", bootstrapped)
    assert missing.returncode == 2 and "no dump at" in missing.stderr
    unknown = restore("nobody-here", bogus, bootstrapped)
    assert unknown.returncode == 2 and "not found" in unknown.stderr
    conn = await asyncpg.connect(provisioned.dsn)
    try:
        assert await conn.fetchval(f'SELECT count(*) FROM "{provisioned.schema}".memories') == 0
    finally:
        await conn.close()
