"""A real cluster for the end-to-end tests: kind on a Docker engine, the engram image built and
loaded, two PostgreSQL servers with pgvector (labelled test and prod), the chart installed.

Skipped with the reason where kind, kubectl or a running Docker engine is missing (this machine
has only Docker's client). `make e2e` runs them; ENGRAM_E2E_KEEP=1 keeps the cluster afterwards.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "engram-e2e"
IMAGE = "engram:e2e"
PGVECTOR = "pgvector/pgvector:pg17"


def missing_tools() -> str | None:
    for tool in ("docker", "kind", "kubectl"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        return "no Docker engine is running (docker info failed)"
    return None


def run(*args: str, **kwargs: Any) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, **kwargs).stdout


def until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as e:  # the cluster is still settling
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(2)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}: {last!r}")


def database(name: str, environment: str, password: str) -> list[dict[str, Any]]:
    """A pgvector server, and a Job that labels its database with its environment (`engram migrate`)."""
    labels = {"app": name}
    dsn = f"postgresql://postgres:{password}@{name}.databases.svc:5432/postgres"
    pod = {
        "containers": [
            {
                "name": "postgres",
                "image": PGVECTOR,
                "env": [{"name": "POSTGRES_PASSWORD", "value": password}],
                "ports": [{"containerPort": 5432}],
                "readinessProbe": {"exec": {"command": ["pg_isready", "-U", "postgres"]}, "periodSeconds": 2},
            }
        ]
    }
    migrate = {
        "restartPolicy": "OnFailure",
        "containers": [
            {
                "name": "migrate",
                "image": IMAGE,
                "args": ["migrate"],
                "env": [
                    {"name": "ENGRAM_DATABASE_URL", "value": dsn},
                    {"name": "ENGRAM_ENVIRONMENT", "value": environment},
                ],
            }
        ],
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": "databases"},
            "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": "databases"},
            "spec": {"selector": labels, "ports": [{"port": 5432}]},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{name}-admin", "namespace": "engram-system"},
            "stringData": {"dsn": dsn},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": f"{name}-label", "namespace": "databases"},
            "spec": {"backoffLimit": 20, "template": {"spec": migrate}},
        },
    ]


@pytest.fixture(scope="session")
def kubeconfig(tmp_path_factory) -> Iterator[Path]:
    reason = missing_tools()
    if reason:
        pytest.skip(f"end-to-end tests need a kind cluster: {reason}")
    existing = run("kind", "get", "clusters").split()
    if CLUSTER not in existing:
        run("kind", "create", "cluster", "--name", CLUSTER, "--wait", "120s")
    path = tmp_path_factory.mktemp("kind") / "kubeconfig"
    path.write_text(run("kind", "get", "kubeconfig", "--name", CLUSTER))
    try:
        yield path
    finally:
        if not os.environ.get("ENGRAM_E2E_KEEP"):
            run("kind", "delete", "cluster", "--name", CLUSTER)


@pytest.fixture(scope="session")
def kube(kubeconfig: Path):
    import kubernetes

    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    return kubernetes.client.ApiClient(configuration)


@pytest.fixture(scope="session")
def installed(kubeconfig: Path, kube) -> Path:
    """Image built and loaded, databases up and labelled, the chart installed and its operator running."""
    import helm_python as helm
    from kubernetes import client, utils

    run("docker", "build", "-t", IMAGE, str(ROOT))
    run("kind", "load", "docker-image", IMAGE, "--name", CLUSTER)
    core = client.CoreV1Api(kube)
    for namespace in ("databases", "engram-system", "agents"):
        core.create_namespace({"metadata": {"name": namespace}})
    for obj in database("pg-test", "test", "test-secret") + database("pg-prod", "prod", "prod-secret"):
        utils.create_from_dict(kube, obj)
    batch = client.BatchV1Api(kube)
    for name in ("pg-test", "pg-prod"):
        until(
            lambda n=name: batch.read_namespaced_job(f"{n}-label", "databases").status.succeeded,
            300,
            f"{name} labelled",
        )

    values = {
        "image": {"repository": IMAGE.split(":")[0], "tag": IMAGE.split(":")[1], "pullPolicy": "Never"},
        "operator": {"driftIntervalSeconds": 10},
        "instances": [
            {"name": "pg-test", "environment": "test", "adminDsnSecret": {"name": "pg-test-admin", "key": "dsn"}},
            {"name": "pg-prod", "environment": "prod", "adminDsnSecret": {"name": "pg-prod-admin", "key": "dsn"}},
        ],
    }
    helm.Config(kubeconfig_path=kubeconfig, namespace="engram-system").install(
        ROOT / "charts" / "engram", "engram", values, namespace="engram-system", wait="watcher", timeout=300
    )
    return kubeconfig


def secret_value(kube, namespace: str, name: str, key: str) -> str:
    from kubernetes import client

    data = client.CoreV1Api(kube).read_namespaced_secret(name, namespace).data
    return base64.b64decode(data[key]).decode()
