"""The operator's access to the Kubernetes API for the objects a tenant owns (the official client).

Kopf keeps its own connection for watching; both are built from one configuration at login, so
they always talk to the same API server with the same credentials.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Literal

import kopf
import kubernetes
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.rest import ApiException

FIELD_MANAGER = "engram-operator"
GROUP, VERSION, PLURAL = "memory.engram.dev", "v1alpha1", "memorytenants"

# (apiVersion, kind) -> plural, for everything the operator reads or writes.
_PLURALS = {
    ("v1", "Secret"): "secrets",
    ("v1", "Service"): "services",
    ("apps/v1", "Deployment"): "deployments",
    ("batch/v1", "CronJob"): "cronjobs",
    ("networking.k8s.io/v1", "NetworkPolicy"): "networkpolicies",
    (f"{GROUP}/{VERSION}", "MemoryTenant"): PLURAL,
}

Applied = Literal["created", "updated", "unchanged"]


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


def is_subset(desired: Any, live: Any) -> bool:
    """Whether everything the operator sets is still so (the API server adds defaults around it)."""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(is_subset(v, live.get(k)) for k, v in desired.items())
    if isinstance(desired, list):
        return isinstance(live, list) and len(desired) == len(live) and all(map(is_subset, desired, live))
    return desired == live


class Kube:
    """Blocking client calls, each run in a worker thread so the operator's loop never waits on them."""

    def __init__(self, configuration: Configuration) -> None:
        self._client = ApiClient(configuration)

    def close(self) -> None:
        self._client.close()

    async def _call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json", **query: Any
    ) -> Any:
        def call() -> Any:
            return self._client.call_api(
                path,
                method,
                query_params=list(query.items()),
                header_params={"Accept": "application/json", "Content-Type": content_type},
                body=body,
                response_types_map={200: "object", 201: "object", 202: "object"},
                auth_settings=["BearerToken"],
                _return_http_data_only=True,
                _request_timeout=30,
            )

        return await asyncio.to_thread(call)

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self._call("GET", _path(api_version, kind, namespace, name))
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    async def apply(self, manifest: dict[str, Any]) -> Applied:
        """Create the object, or bring it back to ``manifest`` if it drifted: server-side apply either
        way, so the operator owns every field it sets and a field it stops setting goes away."""
        meta = manifest["metadata"]
        api_version, kind, namespace, name = manifest["apiVersion"], manifest["kind"], meta["namespace"], meta["name"]
        live = await self.get(api_version, kind, namespace, name)
        if live is not None and is_subset(manifest, live):
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

    async def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        try:
            await self._call("DELETE", _path(api_version, kind, namespace, name), {"propagationPolicy": "Background"})
        except ApiException as e:
            if e.status == 404:
                return False
            raise
        return True

    async def patch_status(self, namespace: str, name: str, status: dict[str, Any]) -> bool:
        """Merge ``status`` into the tenant's; False when the tenant is gone."""
        path = _path(f"{GROUP}/{VERSION}", "MemoryTenant", namespace, name) + "/status"
        try:
            await self._call("PATCH", path, {"status": status}, "application/merge-patch+json")
        except ApiException as e:
            if e.status == 404:
                return False
            raise
        return True
