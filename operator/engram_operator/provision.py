"""Provisioning a tenant on a database instance: schema + a login role owning only that schema,
migrations, an API key. Idempotent; fails closed on a database of the wrong environment and never
adopts a schema or role it did not create."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import asyncpg

from engram.domain.tenancy import hash_key, schema_name
from engram.store import control, tenant_meta
from engram.store.migrate import migrate_schema
from engram_operator.config import Instance
from engram_operator.manifests import DATABASE_CA_PATH
from engram_operator.placement import PlacementError, Survey

T = TypeVar("T")


@dataclass(frozen=True)
class Provisioned:
    instance: str
    schema: str
    role: str
    dsn: str  # how the tenant's pods reach its schema, with the tenant role's credentials
    embedding_model: str  # the model its vectors are made with (changed only by `engram reindex`)


@dataclass(frozen=True)
class Claim:
    """Who holds a tenant name in a database: a MemoryTenant, by cluster, namespace and name
    (``k8s:<cluster>/<namespace>/<name>``), so two clusters sharing a server refuse each other's
    tenants instead of revoking each other's keys. ``former`` is the same MemoryTenant's claim as
    operators before cluster ids wrote it; it is taken over, once."""

    holder: str
    former: str | None = None

    def accepts(self, claimed_by: str | None) -> bool:
        return claimed_by is not None and claimed_by in (self.holder, self.former)


def role_name(tenant: str) -> str:
    return "engram_t_" + tenant.replace("-", "_")


def tenant_lock(tenant: str) -> str:
    """The advisory lock (hashtext of this) a tenant's provisioning holds in its database."""
    return f"engram tenant {tenant}"


async def verify_environment(conn: asyncpg.Connection, instance: Instance) -> None:
    """The database itself must say it serves the instance's environment: a DSN pointing at the
    wrong server fails here, before anything is created."""
    label = await control.read_environment(conn)
    if label is None:
        raise PlacementError(
            f"the database of instance {instance.name!r} carries no environment label; label it once with "
            f"`ENGRAM_ENVIRONMENT={instance.environment} engram migrate`"
        )
    if label != instance.environment:
        raise PlacementError(
            f"instance {instance.name!r} is configured as {instance.environment} but its database is labelled "
            f"{label}: refusing to touch it (is the DSN pointing at the wrong server?)"
        )


_PRIVILEGES = """
    SELECT r.rolsuper AS superuser, r.rolcreaterole AS create_role, current_database() AS database,
           has_database_privilege(current_database(), 'CREATE') AS create_schema,
           EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'vector') AS vector_installed,
           EXISTS (SELECT 1 FROM pg_catalog.pg_available_extensions WHERE name = 'vector') AS vector_available,
           coalesce((SELECT bool_or(trusted) FROM pg_catalog.pg_available_extension_versions WHERE name = 'vector'),
                    false) AS vector_trusted
    FROM pg_catalog.pg_roles r WHERE r.rolname = current_user"""


async def verify_privileges(conn: asyncpg.Connection, instance: Instance) -> None:
    """What the admin DSN's role must be able to do, checked before anything is tried: a missing
    right is named, with what it is for, rather than met halfway through a tenant's creation."""
    can = await conn.fetchrow(_PRIVILEGES)
    missing = []
    if not (can["superuser"] or can["create_role"]):
        missing.append("CREATEROLE (each tenant gets a login role of its own)")
    if not (can["superuser"] or can["create_schema"]):
        missing.append(f"CREATE on database {can['database']} (each tenant gets a schema)")
    if not can["vector_installed"]:
        if not can["vector_available"]:
            missing.append("pgvector installed on the database server (no 'vector' extension is available)")
        elif not (can["superuser"] or (can["vector_trusted"] and can["create_schema"])):
            missing.append(
                f"the vector extension: run `CREATE EXTENSION vector` in {can['database']} once as a superuser"
            )
    if missing:
        raise PlacementError(f"the admin role of instance {instance.name!r} lacks: " + "; ".join(missing))


# How long a cancelled provisioning (the operator stopping) waits for the server to stop the
# statement under way and roll back, and then for the connection to close, before dropping it.
GRACE_SECONDS = 1.5


async def _as_admin(instance: Instance, work: Callable[[asyncpg.Connection], Coroutine[Any, Any, T]]) -> T:
    """``work`` on an admin connection to a database whose environment label was just verified.

    Cancelled (the operator stopping mid-reconcile), asyncpg asks the server to stop the statement
    under way and the transactions roll back: quick when the server answers. When it does not
    (overloaded, unreachable), a ROLLBACK would wait without end and hold the stopping operator, so
    after GRACE_SECONDS the connection is dropped: the server rolls back what was not committed
    when it notices, and as every step is idempotent the next reconciliation finishes the work."""
    conn = await asyncpg.connect(instance.admin_dsn.get_secret_value())
    try:
        task = asyncio.ensure_future(_verified(conn, instance, work))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()
            _, pending = await asyncio.wait({task}, timeout=GRACE_SECONDS)
            if pending:
                conn.terminate()  # what still waits on the connection fails at once
                await asyncio.wait({task}, timeout=GRACE_SECONDS)
            if task.done() and not task.cancelled():
                task.exception()  # the failure of the abandoned work is no news: it was cancelled
            raise
    finally:
        with contextlib.suppress(Exception):  # close() drops the connection itself if it must
            await conn.close(timeout=GRACE_SECONDS)


async def _verified(
    conn: asyncpg.Connection, instance: Instance, work: Callable[[asyncpg.Connection], Coroutine[Any, Any, T]]
) -> T:
    await verify_privileges(conn, instance)  # first: a role without them may not even read the label
    await verify_environment(conn, instance)
    return await work(conn)


async def ensure_tenant(
    instance: Instance,
    tenant: str,
    model: str,
    dim: int,
    password: str,
    api_key: str,
    claim: Claim,
    *,
    new_password: bool = True,
    connection_limit: int = -1,
    key_overlap: float = 0.0,
) -> Provisioned:
    """Create or repair the tenant; ``password`` and ``api_key`` become (or stay) its credentials.
    ``claim`` names the owner (a MemoryTenant): a name held by another is refused.
    With ``new_password`` false the role keeps the password it has (the one the caller knows), so a
    periodic repair does not rewrite the catalog; it is still set if the role has to be fixed.
    ``connection_limit`` caps the role's sessions (-1: no cap), so no tenant can take the server's
    every connection. A new ``api_key`` retires the keys before it after ``key_overlap`` seconds
    (a rotation: agents move to the new key meanwhile), or at once (a lost key)."""
    schema, role = schema_name(tenant), role_name(tenant)

    async def provision(conn: asyncpg.Connection) -> str:
        await _ensure_instance(conn)
        # One transaction: cut short, it leaves nothing (role, schema, key, registration) behind.
        async with conn.transaction():
            # Two reconciliations of one tenant (a restart, a second operator) take turns.
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", tenant_lock(tenant))
            registered = await _ensure_role_and_schema(conn, tenant, claim, password, new_password, connection_limit)
            await conn.execute(f'SET LOCAL ROLE "{role}"')  # everything below is owned by the tenant role
            await migrate_schema(conn, f'"{schema}"', "tenant", dim)
            meta = await tenant_meta.read_meta(conn, f'"{schema}"')
            if meta is None:
                await tenant_meta.write_meta(conn, f'"{schema}"', tenant, model, dim)
                meta = await tenant_meta.read_meta(conn, f'"{schema}"')
            if not await tenant_meta.key_is_valid(conn, f'"{schema}"', hash_key(api_key)):
                await tenant_meta.retire_keys(conn, f'"{schema}"', key_overlap)
                await tenant_meta.add_key(conn, f'"{schema}"', hash_key(api_key))
            await conn.execute("RESET ROLE")
            if not registered:
                await control.register_tenant(conn, tenant, schema, claim.holder)
        # Apart and short: the rows it writes are every tenant's, so their writers take turns.
        async with conn.transaction():
            await _grant_control_reading(conn, role)
        if not new_password and not await _logs_in(instance, role, password):
            # The Secret and the role disagree (a Secret restored from an older backup): the
            # pods hold the Secret's password, so the role takes it.
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", tenant_lock(tenant))
                await conn.execute(await _password_statement(conn, "ALTER", role, password, ""))
        if meta is None:  # the migrations make the table and the row is written above
            raise RuntimeError(f"tenant {tenant}: no meta row after provisioning")
        return meta["embedding_model"]

    model_in_use = await _as_admin(instance, provision)
    return Provisioned(instance.name, schema, role, tenant_dsn(instance, role, password), model_in_use)


# (can log in, superuser, create databases, create roles, inherit) of a tenant role.
_ROLE_AS_WANTED = (True, False, False, False, False)


# Catalog rows every tenant shares (the control schema's grants, the extension) are written by one
# short transaction at a time, under this lock, and only when something is missing: a concurrent
# write of the same row fails with "tuple concurrently updated".
_SHARED_CATALOG_LOCK = "engram shared catalog"


async def _lock_shared_catalog(conn: asyncpg.Connection) -> None:
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", _SHARED_CATALOG_LOCK)


async def _ensure_instance(conn: asyncpg.Connection) -> None:
    """The vector extension and the control schema, created or migrated when they are not yet."""
    async with conn.transaction():
        if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'vector')"):
            await _lock_shared_catalog(conn)
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    await control.migrate_control(conn)


async def _grant_control_reading(conn: asyncpg.Connection, role: str) -> None:
    """The service checks the database's environment label before it serves anything: the role may
    read it. Checked first, so a repair writes nothing."""
    usage = "SELECT has_schema_privilege($1, 'engram_control', 'USAGE')"
    select = "SELECT has_table_privilege($1, 'engram_control.instance', 'SELECT')"
    if await conn.fetchval(usage, role) and await conn.fetchval(select, role):
        return
    await _lock_shared_catalog(conn)
    if not await conn.fetchval(usage, role):
        await conn.execute(f'GRANT USAGE ON SCHEMA engram_control TO "{role}"')
    if not await conn.fetchval(select, role):
        await conn.execute(f'GRANT SELECT ON engram_control.instance TO "{role}"')


async def _ensure_role_and_schema(
    conn: asyncpg.Connection, tenant: str, claim: Claim, password: str, new_password: bool, connection_limit: int
) -> bool:
    """Create or repair the role and its schema; returns whether the tenant was registered already."""
    schema, role = schema_name(tenant), role_name(tenant)
    registered = await _holds(conn, tenant, claim)
    attributes = await conn.fetchrow(
        """SELECT rolcanlogin, rolsuper, rolcreatedb, rolcreaterole, rolinherit, rolconnlimit
           FROM pg_catalog.pg_roles WHERE rolname = $1""",
        role,
    )
    schema_exists = await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)", schema
    )
    if not registered and (attributes is not None or schema_exists):
        raise PlacementError(f"role {role} or schema {schema} exists but engram did not create it: refusing to adopt")
    limit = int(connection_limit)
    if attributes is None or new_password or tuple(attributes)[:5] != _ROLE_AS_WANTED:
        verb = "CREATE" if attributes is None else "ALTER"
        options = f"LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT CONNECTION LIMIT {limit}"
        await conn.execute(await _password_statement(conn, verb, role, password, options))
    elif attributes["rolconnlimit"] != limit:  # the password stays: the pods know it
        await conn.execute(f'ALTER ROLE "{role}" CONNECTION LIMIT {limit}')
    if not await conn.fetchval("SELECT pg_has_role(current_user, $1, 'MEMBER')", role):
        await conn.execute(f'GRANT "{role}" TO CURRENT_USER')  # lets a non-superuser admin act as the role
    if not schema_exists:
        await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}" AUTHORIZATION "{role}"')
    return registered


async def _password_statement(conn: asyncpg.Connection, verb: str, role: str, password: str, options: str) -> str:
    """``{verb} ROLE role {options} PASSWORD '...'``, quoted by the server itself."""
    return await conn.fetchval(
        f"SELECT format('{verb} ROLE %I {options} PASSWORD %L', $1::text, $2::text)", role, password
    )


# How long the check that a tenant's password still logs in may take.
LOGIN_CHECK_SECONDS = 5.0


async def _logs_in(instance: Instance, role: str, password: str) -> bool:
    """Whether ``password`` logs ``role`` in, over the admin DSN's route (host, TLS). Only a refused
    password says no: a full connection slot or a slow server is no reason to rewrite it."""
    parts = urlsplit(instance.admin_dsn.get_secret_value())
    host = parts.netloc.rsplit("@", 1)[-1]
    dsn = parts._replace(netloc=f"{quote(role)}:{quote(password, safe='')}@{host}").geturl()
    try:
        conn = await asyncpg.connect(dsn, timeout=LOGIN_CHECK_SECONDS)
    except asyncpg.InvalidPasswordError:
        return False
    except (TimeoutError, OSError, asyncpg.PostgresError):
        return True
    await conn.close()
    return True


async def retire_tenant(instance: Instance, tenant: str, claim: Claim) -> None:
    """deletionPolicy Retain: the data stays, but nobody can log in or use a key until it is re-created."""
    schema, role = f'"{schema_name(tenant)}"', role_name(tenant)

    async def retire(conn: asyncpg.Connection) -> None:
        if not await _holds(conn, tenant, claim):
            return
        async with conn.transaction():
            await conn.execute(f'ALTER ROLE "{role}" NOLOGIN')
            await conn.execute(f'SET LOCAL ROLE "{role}"')
            await tenant_meta.revoke_all_keys(conn, schema)

    await _as_admin(instance, retire)


async def _holds(conn: asyncpg.Connection, tenant: str, claim: Claim) -> bool:
    """Whether ``claim`` holds the tenant name (False when nobody does); another holder is refused."""
    registered, claimed_by = await control.tenant_claim(conn, tenant)
    if registered and not claim.accepts(claimed_by):
        holder = claimed_by or "a tenant made with `engram tenant create`"
        raise PlacementError(f"tenant name {tenant!r} on this instance belongs to {holder}: refused")
    if registered and claimed_by != claim.holder:
        await control.transfer_claim(conn, tenant, claim.holder)
    return registered


async def survey(instance: Instance, tenant: str, claim: Claim) -> Survey:
    """Whether ``claim`` holds ``tenant`` on the instance, and how many tenants it has; nothing is written."""

    async def look(conn: asyncpg.Connection) -> Survey:
        count = await control.count_tenants(conn)
        registered, claimed_by = await control.tenant_claim(conn, tenant) if count else (False, None)
        ours = claim.accepts(claimed_by)
        taken_by = (claimed_by or "a tenant made with `engram tenant create`") if registered and not ours else None
        return Survey(instance.name, ours, count, taken_by=taken_by, capacity=instance.max_tenants)

    return await _as_admin(instance, look)


async def _role_exists(conn: asyncpg.Connection, role: str) -> bool:
    return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1)", role))


async def drop_tenant(instance: Instance, tenant: str, claim: Claim) -> None:
    """deletionPolicy Delete: the schema, everything in it and the role go."""
    role = role_name(tenant)

    async def drop(conn: asyncpg.Connection) -> None:
        if not await _holds(conn, tenant, claim):
            return
        async with conn.transaction():
            if await _role_exists(conn, role):
                await conn.execute(f'DROP OWNED BY "{role}" CASCADE')
                await conn.execute(f'DROP ROLE "{role}"')
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema_name(tenant)}" CASCADE')
            await conn.execute("DELETE FROM engram_control.tenants WHERE name = $1", tenant)

    await _as_admin(instance, drop)


# Connection parameters that name a file or socket on the operator's own disk: meaningless in a
# tenant's pod (its CA comes from the instance's ``tls``).
_OPERATOR_LOCAL = {"sslrootcert", "sslcert", "sslkey", "sslcrl", "sslcrldir", "sslpassword", "passfile", "host", "port"}


def tenant_dsn(instance: Instance, role: str, password: str) -> str:
    """The tenant role's DSN: the admin DSN's server and connection parameters (TLS mode above all),
    the tenant's credentials, and the CA its pods mount when the instance names one."""
    parts = urlsplit(instance.admin_dsn.get_secret_value())
    if instance.tenant_host is None and parts.hostname is None:
        raise PlacementError(
            f"instance {instance.name!r}: the admin DSN names no host (a socket?); set tenantHost to "
            "the host:port the tenants' pods reach the server at"
        )
    host = instance.tenant_host or f"{parts.hostname}:{parts.port or 5432}"
    params = {k: v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in _OPERATOR_LOCAL}
    if instance.tls.mode:
        params["sslmode"] = instance.tls.mode
    if instance.tls.root_cert:
        params["sslrootcert"] = DATABASE_CA_PATH
    query = f"?{urlencode(params)}" if params else ""
    return f"postgresql://{quote(role)}:{quote(password, safe='')}@{host}{parts.path or '/postgres'}{query}"
