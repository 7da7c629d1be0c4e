"""engram on a real Kubernetes cluster (kind): what the emulator cannot show. The API server
validates and defaults MemoryTenants (CEL included), the Deployment controller brings the tenant's
pods up, RBAC lets the operator do its work, garbage collection and a real MCP client do the rest."""

import socket
import subprocess
import time
import uuid

import httpx2
import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import secret_value, until

pytestmark = pytest.mark.e2e
GROUP, VERSION, PLURAL = "memory.engram.dev", "v1alpha1", "memorytenants"


def tenant(name: str, **spec) -> dict:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MemoryTenant",
        "metadata": {"name": name},
        "spec": {"environment": "test", **spec},
    }


def phase(custom: client.CustomObjectsApi, name: str) -> str | None:
    return (custom.get_namespaced_custom_object(GROUP, VERSION, "agents", PLURAL, name).get("status") or {}).get(
        "phase"
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_a_memory_tenant_serves_mcp_on_a_real_cluster(installed, kube):
    custom = client.CustomObjectsApi(kube)
    name = f"e2e-{uuid.uuid4().hex[:6]}"
    custom.create_namespaced_custom_object(
        GROUP, VERSION, "agents", PLURAL, tenant(name, networkPolicy={"enabled": True})
    )
    until(lambda: phase(custom, name) == "Ready", 600, f"{name} Ready")
    key = secret_value(kube, "agents", f"engram-{name}-client", "api-key")

    port = free_port()
    forward = subprocess.Popen(
        [
            "kubectl",
            "--kubeconfig",
            str(installed),
            "-n",
            "agents",
            "port-forward",
            f"svc/engram-{name}",
            f"{port}:8080",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(3)
        url = f"http://127.0.0.1:{port}/t/{name}/mcp"
        headers = {"Authorization": f"Bearer {key}"}
        async with Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers))) as mcp:
            written = await mcp.call_tool("write_memory", {"content": "用户偏好顺丰快递"})
            assert not written.is_error, written
            found = await mcp.call_tool("search_memory", {"query": "顺丰"})
            assert found.structured_content["hits"]
    finally:
        forward.terminate()

    custom.delete_namespaced_custom_object(GROUP, VERSION, "agents", PLURAL, name)
    apps = client.AppsV1Api(kube)

    def gone() -> bool:
        try:
            apps.read_namespaced_deployment(f"engram-{name}", "agents")
        except ApiException as e:
            return e.status == 404
        return False

    until(gone, 300, "the tenant's Deployment removed")


def test_the_api_server_enforces_the_crd(installed, kube):
    custom = client.CustomObjectsApi(kube)
    with pytest.raises(ApiException) as bad_environment:
        custom.create_namespaced_custom_object(
            GROUP, VERSION, "agents", PLURAL, tenant("e2e-bad", environment="staging")
        )
    assert bad_environment.value.status == 422
    name = f"e2e-{uuid.uuid4().hex[:6]}"
    custom.create_namespaced_custom_object(GROUP, VERSION, "agents", PLURAL, tenant(name))
    with pytest.raises(ApiException) as immutable:
        custom.patch_namespaced_custom_object(GROUP, VERSION, "agents", PLURAL, name, {"spec": {"environment": "prod"}})
    assert "environment is immutable" in immutable.value.body
    stored = custom.get_namespaced_custom_object(GROUP, VERSION, "agents", PLURAL, name)
    assert stored["spec"]["deletionPolicy"] == "Retain" and stored["spec"]["replicas"] == 1
    custom.delete_namespaced_custom_object(GROUP, VERSION, "agents", PLURAL, name)


def test_a_test_tenant_asking_for_the_prod_instance_is_refused(installed, kube):
    custom = client.CustomObjectsApi(kube)
    name = f"e2e-{uuid.uuid4().hex[:6]}"
    custom.create_namespaced_custom_object(
        GROUP, VERSION, "agents", PLURAL, tenant(name, database={"instance": "pg-prod"})
    )
    until(lambda: phase(custom, name) == "Failed", 120, f"{name} refused")
    status = custom.get_namespaced_custom_object(GROUP, VERSION, "agents", PLURAL, name)["status"]
    assert "serves prod" in status["message"]
    custom.delete_namespaced_custom_object(GROUP, VERSION, "agents", PLURAL, name)
