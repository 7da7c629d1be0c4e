"""The operator, as it runs in a cluster, against the Kubernetes emulator: kopf in its own thread
and event loop (as a task of pytest's loop it would cancel pytest's teardown), logged in through
$KUBECONFIG like any client, talking HTTP to the emulator served from pytest's loop."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import kopf
import yaml

from engram.domain.tenancy import schema_name
from engram_operator.config import OperatorConfig
from engram_operator.handlers import Operator, register
from engram_operator.provision import role_name
from tests.operator.emulator import KubeEmulator

TENANTS = "memory.engram.dev/v1alpha1/memorytenants"


def write_kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "emulator", "cluster": {"server": server}}],
                "users": [{"name": "operator", "user": {"token": "emulator-token"}}],
                "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "user": "operator"}}],
                "current-context": "emulator",
            }
        )
    )
    return path


class OperatorThread:
    def __init__(self, config: OperatorConfig) -> None:
        self.registry = kopf.OperatorRegistry()
        register(self.registry, Operator(config))
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="kopf", daemon=True)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            kopf.run(
                loop=loop,
                registry=self.registry,
                standalone=True,
                clusterwide=True,
                ready_flag=self.ready,
                stop_flag=self.stop,
            )
        except BaseException as e:  # surfaced by the fixture
            self.error = e
        finally:
            loop.close()

    async def __aenter__(self) -> OperatorThread:
        self.thread.start()
        # Waited for in a worker thread: the emulator serves from this loop and must keep serving.
        if not await asyncio.to_thread(self.ready.wait, 60):
            raise RuntimeError(f"the operator did not start: {self.error!r}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop.set()
        await asyncio.to_thread(self.thread.join, 30)
        if self.error is not None:
            raise self.error


class Cluster:
    """What a test does to the cluster (kubectl's part) and sees in it."""

    def __init__(self, emulator: KubeEmulator) -> None:
        self.emulator = emulator

    async def _request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        async with self.emulator.request(method, path, json=body, headers={"Content-Type": content_type}) as response:
            payload = await response.json()
            if response.status >= 400:
                raise AssertionError(f"{method} {path}: {response.status} {payload.get('message')}")
            return payload

    async def apply_tenant(self, namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        body = {
            "apiVersion": "memory.engram.dev/v1alpha1",
            "kind": "MemoryTenant",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
        return await self._request(
            "POST", f"/apis/memory.engram.dev/v1alpha1/namespaces/{namespace}/memorytenants", body
        )

    async def patch(self, resource: str, namespace: str, name: str, patch: Any, subresource: str = "") -> Any:
        kind = "application/json-patch+json" if isinstance(patch, list) else "application/merge-patch+json"
        return await self._request("PATCH", self.path(resource, namespace, name) + subresource, patch, kind)

    async def apply(self, resource: str, namespace: str, name: str, config: dict[str, Any], manager: str) -> Any:
        """Server-side apply as another field manager would (a controller, a webhook, kubectl)."""
        path = self.path(resource, namespace, name) + f"?fieldManager={manager}&force=true"
        return await self._request("PATCH", path, config, "application/apply-patch+yaml")

    async def delete(self, resource: str, namespace: str, name: str) -> Any:
        return await self._request("DELETE", self.path(resource, namespace, name))

    @staticmethod
    def path(resource: str, namespace: str, name: str) -> str:
        *group_version, plural = resource.split("/")
        prefix = "/api/v1" if group_version == ["v1"] else f"/apis/{'/'.join(group_version)}"
        return f"{prefix}/namespaces/{namespace}/{plural}/{name}"

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.emulator.live(resource, namespace, name)

    def tenant(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.get(TENANTS, namespace, name)

    def events(self, namespace: str, name: str) -> list[dict[str, Any]]:
        return [
            e
            for e in self.emulator.all("v1/events")
            if e.get("involvedObject", {}).get("name") == name
            and e.get("involvedObject", {}).get("namespace") == namespace
        ]

    def reasons(self, namespace: str, name: str) -> set[str]:
        return {e.get("reason") for e in self.events(namespace, name)}

    async def play_deployment_controller(self, namespace: str, name: str) -> None:
        """What kube-controller-manager would report once the pods are up: all replicas available."""
        deployment = self.get("apps/v1/deployments", namespace, name)
        assert deployment is not None, f"no Deployment {namespace}/{name}"
        replicas = deployment["spec"].get("replicas", 1)
        status = {
            "observedGeneration": deployment["metadata"]["generation"],
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
        }
        await self.patch("apps/v1/deployments", namespace, name, {"status": status}, "/status")


async def eventually(check: Callable[[], Any], timeout: float = 30, what: str = "") -> Any:
    """Poll ``check`` (plain or async) until it returns something truthy; its last result is in the
    failure message."""
    deadline = time.monotonic() + timeout
    result = None
    while time.monotonic() < deadline:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or check}: last saw {result!r}")


class DatabaseLink:
    """A TCP relay to a PostgreSQL server that a test can cut: once frozen, nothing passes either
    way and new connections get no answer, as when the database stops answering (a network
    partition, a hung server), with the server itself untouched. Closing the relay drops every
    connection through it, so the server ends (and rolls back) the sessions on its side."""

    def __init__(self, dsn: str) -> None:
        parts = urlsplit(dsn)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._dsn = parts
        self._open = asyncio.Event()
        self._open.set()
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    @property
    def dsn(self) -> str:
        """The DSN that goes through the relay."""
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        netloc = self._dsn.netloc.rsplit("@", 1)[0] + f"@127.0.0.1:{port}"
        return urlunsplit(self._dsn._replace(netloc=netloc))

    def freeze(self) -> None:
        self._open.clear()

    async def __aenter__(self) -> DatabaseLink:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.transport.abort()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _relay(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        self._writers.append(client_out)
        server_in, server_out = await asyncio.open_connection(*self._upstream)
        self._writers.append(server_out)
        pipes = [asyncio.ensure_future(self._pipe(a, b)) for a, b in ((client_in, server_out), (server_in, client_out))]
        self._tasks.update(pipes)
        await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        client_out.transport.abort()
        server_out.transport.abort()

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await source.read(65536):
                await self._open.wait()
                sink.write(data)
                await sink.drain()


async def catalog_footprint(admin: asyncpg.Connection, tenants: list[str]) -> dict[str, str]:
    """The row version (xmin) of every catalog and registry row provisioning may write: a repair
    that writes nothing leaves every one as it was."""
    schemas, roles = [schema_name(t) for t in tenants], [role_name(t) for t in tenants]
    rows = await admin.fetch(
        """SELECT 'schema ' || nspname AS what, xmin::text AS version FROM pg_catalog.pg_namespace
             WHERE nspname = 'engram_control' OR nspname = ANY($1::text[])
           UNION ALL SELECT 'role ' || rolname, xmin::text FROM pg_catalog.pg_authid WHERE rolname = ANY($2::text[])
           UNION ALL SELECT 'member ' || r.rolname || ' ' || m.member::regrole::text, m.xmin::text
             FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_authid r ON r.oid = m.roleid
             WHERE r.rolname = ANY($2::text[])
           UNION ALL SELECT 'table engram_control.instance', xmin::text FROM pg_catalog.pg_class
             WHERE oid = 'engram_control.instance'::regclass
           UNION ALL SELECT 'extension vector', xmin::text FROM pg_catalog.pg_extension WHERE extname = 'vector'
           UNION ALL SELECT 'registry ' || name, xmin::text FROM engram_control.tenants WHERE name = ANY($3::text[])""",
        schemas,
        roles,
        tenants,
    )
    found = {r["what"]: r["version"] for r in rows}
    for schema in schemas:
        for table in ("meta", "api_keys", "schema_migrations"):
            for i, version in enumerate(await admin.fetch(f'SELECT xmin::text FROM "{schema}".{table}')):
                found[f"{schema}.{table} {i}"] = version[0]
    return found
