"""The MemoryTenant CRD, checked offline: it validates as a Kubernetes object, its schema accepts the
documented examples, and its CEL rules (evaluated with cel-python, as the API server would) refuse
what they promise to refuse."""

import copy
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CRD = yaml.safe_load((ROOT / "crds" / "memorytenant.yaml").read_text())
SCHEMA = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
EXAMPLES = list(yaml.safe_load_all((ROOT / "docs" / "examples" / "memorytenants.yaml").read_text()))
CEL = celpy.Environment()


def with_defaults(schema: dict[str, Any], value: Any) -> Any:
    """What the API server stores: defaults filled in wherever the enclosing object is given."""
    if not isinstance(value, dict) or schema.get("type") != "object":
        return value
    filled = dict(value)
    for key, sub in schema.get("properties", {}).items():
        if key not in filled and "default" in sub:
            filled[key] = copy.deepcopy(sub["default"])
        if key in filled:
            filled[key] = with_defaults(sub, filled[key])
    return filled


def cel_violations(schema: dict[str, Any], new: Any, old: Any = None) -> list[str]:
    """Messages of the x-kubernetes-validations rules ``new`` breaks (transition rules need ``old``)."""
    found = []
    for rule in schema.get("x-kubernetes-validations", []):
        if "oldSelf" in rule["rule"] and old is None:
            continue
        bindings = {"self": celpy.json_to_cel(new)}
        if old is not None:
            bindings["oldSelf"] = celpy.json_to_cel(old)
        if not CEL.program(CEL.compile(rule["rule"])).evaluate(bindings):
            found.append(rule["message"])
    if isinstance(new, dict):
        for key, sub in schema.get("properties", {}).items():
            if key in new:
                found += cel_violations(sub, new[key], old.get(key) if isinstance(old, dict) else None)
    return found


def tenant(name: str = "support-bot", **spec: Any) -> dict[str, Any]:
    body = {"apiVersion": "memory.engram.dev/v1alpha1", "kind": "MemoryTenant", "metadata": {"name": name}}
    return with_defaults(SCHEMA, {**body, "spec": {"environment": "test", **spec}})


def test_the_crd_is_a_valid_kubernetes_object_with_status_and_columns():
    kubernetes_validate.validate(CRD, "1.33", strict=True)
    version = CRD["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert {"Environment", "Instance", "Phase", "MCP URL", "Age"} <= set(columns)
    assert CRD["spec"]["names"]["shortNames"][0] == "mt"


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["metadata"]["name"] for e in EXAMPLES])
def test_the_documented_examples_are_accepted(example):
    jsonschema.validate(example, SCHEMA)
    assert cel_violations(SCHEMA, with_defaults(SCHEMA, example)) == []


def test_defaults_fill_a_minimal_tenant():
    spec = tenant(embedding={})["spec"]
    assert spec["deletionPolicy"] == "Retain" and spec["replicas"] == 1
    assert spec["embedding"]["model"] == "use-multilingual-v3"


@pytest.mark.parametrize(
    "spec",
    [
        {"environment": "staging"},
        {"environment": "test", "replicas": 21},
        {"environment": "test", "retrieval": {"topK": 0}},
        {"environment": "test", "forgetting": {"schedule": "every day"}},
        {"environment": "test", "deletionPolicy": "Orphan"},
        {},
    ],
)
def test_the_schema_refuses_bad_specs(spec):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"metadata": {"name": "x"}, "spec": spec}, SCHEMA)


def test_the_environment_and_the_instance_are_immutable():
    old = tenant(database={"instance": "pg-test"})
    moved = tenant(environment="prod", database={"instance": "pg-prod"})
    assert set(cel_violations(SCHEMA, moved, old)) == {
        "environment is immutable",
        "database.instance cannot change once set (moving a tenant is not supported)",
    }
    assert cel_violations(SCHEMA, tenant(database={"instance": "pg-test"}, replicas=3), old) == []
    assert cel_violations(SCHEMA, tenant(database={"instance": "pg-test"}), tenant(database={})) == []


def test_names_and_embedding_models_are_checked():
    assert cel_violations(SCHEMA, tenant(name="a.b")) == [
        "the name becomes the tenant's name: 1-40 lower-case letters, digits and '-'"
    ]
    assert cel_violations(SCHEMA, tenant(name="x" * 41)) != []
    assert cel_violations(SCHEMA, tenant(embedding={"model": "litellm:openai/text-embedding-3-small"})) == [
        "a litellm model needs its dimension"
    ]
    assert cel_violations(SCHEMA, tenant(embedding={"model": "bert"})) != []
    assert cel_violations(SCHEMA, tenant(embedding={"model": "litellm:x", "dimension": 1536})) == []


def test_an_enabled_ingress_needs_a_host():
    assert cel_violations(SCHEMA, tenant(ingress={"enabled": True})) == [
        "spec.ingress.host is required when the ingress is enabled"
    ]
    assert cel_violations(SCHEMA, tenant(ingress={"enabled": True, "host": "memory.example.com"})) == []
    assert cel_violations(SCHEMA, tenant(ingress={"enabled": False})) == []
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(tenant(ingress={"enabled": True, "host": "Not A Host"}), SCHEMA)


def test_enabled_backups_need_a_volume():
    assert cel_violations(SCHEMA, tenant(backup={"enabled": True})) == [
        "spec.backup.persistentVolumeClaim is required when backups are enabled"
    ]
    assert cel_violations(SCHEMA, tenant(backup={"enabled": True, "persistentVolumeClaim": "memory-backups"})) == []
    defaults = tenant(backup={"enabled": True, "persistentVolumeClaim": "memory-backups"})["spec"]["backup"]
    assert (defaults["schedule"], defaults["keep"], defaults["image"]) == ("30 2 * * *", 7, "postgres:18-alpine")
