"""Rendering the Helm chart offline (helm-python-sdk bundles Helm's own library)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

CHART = Path(__file__).resolve().parents[2] / "charts" / "engram"
INSTANCES = [
    {"name": "pg-test", "environment": "test", "adminDsnSecret": {"name": "pg-test-admin", "key": "dsn"}},
    {
        "name": "pg-prod",
        "environment": "prod",
        "adminDsnSecret": {"name": "pg-prod-admin", "key": "dsn"},
        "tenantHost": "pg-prod.databases.svc:5432",
        "maxTenants": 5000,
        "tls": {"mode": "verify-full", "rootCertSecret": {"name": "pg-prod-ca", "key": "ca.crt"}},
    },
]


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every object the chart would install, in the release namespace engram-system."""
    helm.disable_logging()
    chart = helm.Chart.load(CHART)
    rendered = chart.render({"instances": INSTANCES, **(values or {})}, name="engram", namespace="engram-system")
    return [
        doc
        for path, text in sorted(rendered.items())
        if path.endswith(".yaml")
        for doc in yaml.safe_load_all(text)
        if doc
    ]


def rules(objects: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) granted by the chart's ClusterRole or Roles."""
    return {
        (group, resource, verb)
        for obj in objects
        if obj["kind"] in ("ClusterRole", "Role")
        for rule in obj["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
