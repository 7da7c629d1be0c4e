"""The operator's access to the Kubernetes API for the objects a tenant owns.

Kopf keeps its own connection for watching; both are built from one configuration at login (the
official client's loader: kubeconfig or the pod's service account), so they always talk to the
same API server with the same credentials.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from typing import Any, Literal

import aiohttp
import kopf
import kubernetes
from kubernetes.client import Configuration

from engram_operator.drift import drifted, with_digest

FIELD_MANAGER = "engram-operator"
HANDOVER_MANAGER = "engram-operator-handover"
GROUP, VERSION, PLURAL = "memory.engram.dev", "v1alpha1", "memorytenants"
CLOSE_SECONDS = 3.0

# (apiVersion, kind) -> plural, for everything the operator reads or writes.
_PLURALS = {
    ("v1", "Secret"): "secrets",
    ("v1", "Service"): "services",
    ("apps/v1", "Deployment"): "deployments",
    ("batch/v1", "CronJob"): "cronjobs",
    ("networking.k8s.io/v1", "NetworkPolicy"): "networkpolicies",
    ("networking.k8s.io/v1", "Ingress"): "ingresses",
    ("autoscaling/v2", "HorizontalPodAutoscaler"): "horizontalpodautoscalers",
    ("policy/v1", "PodDisruptionBudget"): "poddisruptionbudgets",
    ("coordination.k8s.io/v1", "Lease"): "leases",
    (f"{GROUP}/{VERSION}", "MemoryTenant"): PLURAL,
}

Applied = Literal["created", "updated", "deleted", "unchanged"]


class Unread:
    """The object was not read yet (``None`` means read and absent)."""


UNREAD = Unread()


def load_configuration() -> Configuration:
    """In a pod: its service account. Elsewhere: $KUBECONFIG (read now, not at import time)."""
    configuration = Configuration()
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        kubernetes.config.load_incluster_config(client_configuration=configuration)
    else:
        path = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
        kubernetes.config.load_kube_config(config_file=path, client_configuration=configuration)
    return configuration


def connection_info(configuration: Configuration) -> kopf.ConnectionInfo:
    """The same credentials, in the form kopf's own client takes."""
    header = configuration.get_api_key_with_prefix("BearerToken") or configuration.get_api_key_with_prefix(
        "authorization"
    )
    scheme, _, token = (header or "").rpartition(" ")
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        username=configuration.username or None,
        password=configuration.password or None,
        scheme=scheme or None,
        token=token or None,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
    )


def _path(api_version: str, kind: str, namespace: str, name: str | None = None) -> str:
    plural = _PLURALS[(api_version, kind)]
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    path = f"{prefix}/namespaces/{namespace}/{plural}"
    return f"{path}/{name}" if name else path


class KubeError(Exception):
    """The API server answered with an error status."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status


class Kube:
    """The API calls the operator makes itself, over aiohttp on the operator's own event loop, with
    the credentials of the login (the token read again as the official client would, so a rotated
    service-account token is picked up). A call is a task like any other: cancelled with its
    handler when the operator stops, it is dropped at once. (The official client's calls ran in
    worker threads, which nothing can cancel: a slow answer held the stopping process for up to
    30 s a try, and a GET is tried four times.)"""

    def __init__(self, configuration: Configuration, timeout: float = 30) -> None:
        self._configuration = configuration
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        self._retired: list[aiohttp.ClientSession] = []

    def reconfigure(self, configuration: Configuration) -> None:
        """New credentials (a login again): the next call opens a session with them; calls under way
        finish on the old one, which is closed with the rest."""
        self._configuration = configuration
        if self._session is not None:
            self._retired.append(self._session)
            self._session = None

    async def close(self) -> None:
        """Close every session, waiting a few seconds at most (the operator is stopping)."""
        sessions = [s for s in (*self._retired, self._session) if s is not None]
        self._retired, self._session = [], None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CLOSE_SECONDS):
                await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)

    def _open(self) -> aiohttp.ClientSession:
        # Made at the first call, inside the loop that serves it (login runs in a worker thread).
        if self._session is None or self._session.closed:
            tls = connection_info(self._configuration).as_ssl_context()
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls), timeout=self._timeout)
        return self._session

    async def _call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json", **query: str
    ) -> Any:
        headers = {
            "Accept": "application/json",
            "Content-Type": content_type,
            "User-Agent": FIELD_MANAGER,
            **connection_info(self._configuration).as_http_headers(),
        }
        url = self._configuration.host.rstrip("/") + path
        data = None if body is None else json.dumps(body)
        async with self._open().request(method, url, params=query, data=data, headers=headers) as response:
            text = await response.text()
            if response.status >= 400:
                try:
                    message = json.loads(text).get("message") or text
                except (ValueError, AttributeError):
                    message = text
                raise KubeError(response.status, response.reason or "", str(message)[:500])
            return json.loads(text) if text else None

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self._call("GET", _path(api_version, kind, namespace, name))
        except KubeError as e:
            if e.status == 404:
                return None
            raise

    async def apply(self, manifest: dict[str, Any], live: dict[str, Any] | Unread | None = UNREAD) -> Applied:
        """Create the object, or bring it back to ``manifest`` if it drifted or the manifest changed:
        server-side apply either way, so the operator owns every field it sets and a field it stops
        setting goes away (drift.py says what counts as drift). ``live``: the object as the caller
        just read it (None: absent), so that it is not read twice."""
        manifest = with_digest(manifest)
        meta = manifest["metadata"]
        api_version, kind, namespace, name = manifest["apiVersion"], manifest["kind"], meta["namespace"], meta["name"]
        if isinstance(live, Unread):
            live = await self.get(api_version, kind, namespace, name)
        if live is not None and not drifted(manifest, live):
            return "unchanged"
        await self._call(
            "PATCH",
            _path(api_version, kind, namespace, name),
            manifest,
            "application/apply-patch+yaml",
            fieldManager=FIELD_MANAGER,
            force="true",
        )
        return "created" if live is None else "updated"

    async def create(self, manifest: dict[str, Any]) -> dict[str, Any]:
        meta = manifest["metadata"]
        return await self._call("POST", _path(manifest["apiVersion"], manifest["kind"], meta["namespace"]), manifest)

    async def patch(self, api_version: str, kind: str, namespace: str, name: str, patch: dict[str, Any]) -> Any:
        """A merge patch; with ``metadata.resourceVersion`` in it, a 409 if the object changed since."""
        return await self._call(
            "PATCH", _path(api_version, kind, namespace, name), patch, "application/merge-patch+json"
        )

    async def hand_over(self, api_version: str, kind: str, namespace: str, name: str, spec: dict[str, Any]) -> None:
        """Apply ``spec`` fields as a manager of their own (HANDOVER_MANAGER), so that they stay
        when the operator's next apply stops setting them: server-side apply would drop a field
        only the operator owned (a Deployment's replicas would fall to 1 before the autoscaler
        takes them over)."""
        body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": namespace}}
        await self._call(
            "PATCH",
            _path(api_version, kind, namespace, name),
            {**body, "spec": spec},
            "application/apply-patch+yaml",
            fieldManager=HANDOVER_MANAGER,
            force="true",
        )

    async def delete_owned(self, api_version: str, kind: str, namespace: str, name: str, owner_uid: str) -> bool:
        """Delete the object if ``owner_uid`` owns it (one of ours, not a namesake someone made by
        hand); False when there was nothing of ours to delete."""
        live = await self.get(api_version, kind, namespace, name)
        owners = ((live or {}).get("metadata") or {}).get("ownerReferences") or []
        if not any(o.get("uid") == owner_uid for o in owners):
            return False
        return await self.delete(api_version, kind, namespace, name)

    async def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        try:
            await self._call("DELETE", _path(api_version, kind, namespace, name), {"propagationPolicy": "Background"})
        except KubeError as e:
            if e.status == 404:
                return False
            raise
        return True

    async def cluster_uid(self) -> str:
        """The uid of the kube-system namespace: made with the cluster, unique to it."""
        namespace = await self._call("GET", "/api/v1/namespaces/kube-system")
        return str(namespace["metadata"]["uid"])

    async def annotate(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        """Merge ``annotations`` into the tenant's."""
        await self.patch(
            f"{GROUP}/{VERSION}", "MemoryTenant", namespace, name, {"metadata": {"annotations": annotations}}
        )

    async def patch_status(self, namespace: str, name: str, status: dict[str, Any]) -> bool:
        """Merge ``status`` into the tenant's; False when the tenant is gone."""
        path = _path(f"{GROUP}/{VERSION}", "MemoryTenant", namespace, name) + "/status"
        try:
            await self._call("PATCH", path, {"status": status}, "application/merge-patch+json")
        except KubeError as e:
            if e.status == 404:
                return False
            raise
        return True
