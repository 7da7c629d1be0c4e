"""The Helm chart lints, renders objects that validate strictly against the Kubernetes schemas,
checks its values against values.schema.json, and hands the operator a configuration it loads."""

import celpy
import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from engram_operator.config import OperatorConfig
from tests.operator.chart import CHART, render, rules

ROOT = CHART.parents[1]


def by_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def test_the_chart_lints_strictly():
    report = helm.lint(
        CHART,
        {"instances": [{"name": "a", "environment": "test", "adminDsnSecret": {"name": "s", "key": "k"}}]},
        strict=True,
    )
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize(
    "values", [{}, {"operator": {"watchNamespaces": ["agents", "agents-test"]}}], ids=["cluster", "namespaced"]
)
def test_every_rendered_object_validates_against_kubernetes(values):
    objects = render(values)
    assert {o["kind"] for o in objects} >= {"CustomResourceDefinition", "ServiceAccount", "ConfigMap", "Deployment"}
    for obj in objects:
        kubernetes_validate.validate(obj, "1.33", strict=True)


def test_the_operator_runs_as_non_root_with_the_admin_dsns_from_secrets_and_one_acts_at_a_time():
    objects = render({"operator": {"replicas": 2}})
    [deployment] = by_kind(objects, "Deployment")
    spec = deployment["spec"]
    # Two pods or a rollout's surge are safe: one holds the Lease, in the release's namespace.
    assert spec["replicas"] == 2 and spec["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    [configmap] = by_kind(objects, "ConfigMap")
    election = yaml.safe_load(configmap["data"]["config.yaml"])["leaderElection"]
    assert election["namespace"] == "engram-system" and election["name"] == "engram"
    [lease_role] = [r for r in by_kind(objects, "Role") if r["metadata"]["name"] == "engram-leader-election"]
    assert lease_role["metadata"]["namespace"] == "engram-system"
    pod = spec["template"]["spec"]
    [container] = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] and container["securityContext"]["readOnlyRootFilesystem"]
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert container["command"] == ["python", "-m", "engram_operator"] and "--all-namespaces" in container["args"]
    env = {e["name"]: e for e in container["env"]}
    assert env["ENGRAM_INSTANCE_1_ADMIN_DSN"]["valueFrom"]["secretKeyRef"] == {"name": "pg-prod-admin", "key": "dsn"}
    assert env["ENGRAM_INSTANCE_1_ROOT_CERT"]["valueFrom"]["secretKeyRef"] == {"name": "pg-prod-ca", "key": "ca.crt"}
    assert "ENGRAM_INSTANCE_0_ROOT_CERT" not in env
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


def loaded_config(objects: list[dict], tmp_path, monkeypatch) -> OperatorConfig:
    """The operator's configuration from the rendered ConfigMap, with the variables the chart's
    Deployment would give it from Secrets."""
    [configmap] = by_kind(objects, "ConfigMap")
    path = tmp_path / "config.yaml"
    path.write_text(configmap["data"]["config.yaml"])
    monkeypatch.setenv("ENGRAM_INSTANCE_0_ADMIN_DSN", "postgresql://admin:pw@pg-test:5432/engram")
    monkeypatch.setenv("ENGRAM_INSTANCE_1_ADMIN_DSN", "postgresql://admin:pw@pg-prod:5432/engram")
    monkeypatch.setenv("ENGRAM_INSTANCE_1_ROOT_CERT", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    return OperatorConfig.load(path)


def test_the_configmap_is_a_configuration_the_operator_loads(tmp_path, monkeypatch):
    objects = render({"image": {"repository": "registry.example/engram", "tag": "1.2.3"}})
    config = loaded_config(objects, tmp_path, monkeypatch)
    assert config.image == "registry.example/engram:1.2.3"
    assert [(i.name, i.environment) for i in config.instances] == [("pg-test", "test"), ("pg-prod", "prod")]
    assert config.instances[1].tenant_host == "pg-prod.databases.svc:5432"
    assert (config.instances[0].max_tenants, config.instances[1].max_tenants) == (None, 5000)
    assert config.instances[1].tls.mode == "verify-full" and config.instances[1].tls.root_cert.startswith("-----BEGIN")
    assert config.instances[0].tls.mode is None and config.instances[0].tls.root_cert is None
    assert config.instances[0].admin_dsn.get_secret_value().endswith("pg-test:5432/engram")


def test_the_crd_is_the_repositorys_and_survives_uninstall():
    [crd] = by_kind(render(), "CustomResourceDefinition")
    assert crd["metadata"].pop("annotations") == {"helm.sh/resource-policy": "keep"}
    assert crd == yaml.safe_load((ROOT / "crds" / "memorytenant.yaml").read_text())
    assert by_kind(render({"crds": {"install": False}}), "CustomResourceDefinition") == []


def test_rbac_is_least_privilege_and_namespaced_when_asked():
    cluster = render()
    granted = rules(cluster)
    assert not any("*" in rule for rule in granted)
    assert {v for g, r, v in granted if r == "secrets"} == {"get", "create", "patch", "delete"}  # never list
    assert len(by_kind(cluster, "ClusterRole")) == 2 and len(by_kind(cluster, "Role")) == 1  # + Lease, cluster id
    [cluster_id] = [r for r in by_kind(cluster, "ClusterRole") if r["metadata"]["name"] == "engram-cluster-id"]
    assert cluster_id["rules"] == [
        {"apiGroups": [""], "resources": ["namespaces"], "resourceNames": ["kube-system"], "verbs": ["get"]}
    ]

    namespaced = render({"operator": {"watchNamespaces": ["agents", "agents-test"]}, "clusterId": "eu-1"})
    assert by_kind(namespaced, "ClusterRole") == [] and by_kind(namespaced, "ClusterRoleBinding") == []
    assert sorted(r["metadata"]["namespace"] for r in by_kind(namespaced, "Role")) == [
        "agents",
        "agents-test",
        "engram-system",
    ]
    [deployment] = by_kind(namespaced, "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--namespace=agents" in args and "--all-namespaces" not in args


@pytest.mark.parametrize(
    "values",
    [
        {"instances": [{"name": "pg", "environment": "staging", "adminDsnSecret": {"name": "s", "key": "k"}}]},
        {"instances": [{"name": "pg", "environment": "test"}]},
        {"operator": {"replicas": 0}},
        {"operator": {"maxConcurrentRollouts": 0}},
        {"operator": {"leaderElection": {"leaseDurationSeconds": "long"}}},
        {"clusterId": "no spaces"},
        {"image": {"repository": "engram", "pullPolicy": "Sometimes"}},
    ],
)
def test_values_are_checked_by_the_schema(values):
    with pytest.raises(helm.HelmValuesError, match="don't meet the specifications of the schema"):
        render(values)


def test_no_instances_is_a_clear_error():
    with pytest.raises(helm.HelmError, match="set at least one database instance"):
        render({"instances": []})


POLICY = {"namespaces": {"agents": ["prod", "test"], "agents-dev": ["test"]}, "default": [], "admission": True}


def admission_verdict(policy: dict, namespace: str, environment: str) -> tuple[bool, str]:
    """The ValidatingAdmissionPolicy's verdict on a MemoryTenant, its CEL evaluated as the API
    server would (cel-python): (allowed, message)."""
    cel = celpy.Environment()
    tenant = {"metadata": {"name": "bot", "namespace": namespace}, "spec": {"environment": environment}}
    bindings: dict = {"object": celpy.json_to_cel(tenant)}
    for variable in policy["spec"]["variables"]:
        value = cel.program(cel.compile(variable["expression"])).evaluate(bindings)
        bindings["variables"] = celpy.json_to_cel({variable["name"]: value})
    [rule] = policy["spec"]["validations"]
    allowed = bool(cel.program(cel.compile(rule["expression"])).evaluate(bindings))
    return allowed, str(cel.program(cel.compile(rule["messageExpression"])).evaluate(bindings))


def test_the_environment_policy_is_enforced_at_the_api_server_as_the_operator_enforces_it(tmp_path, monkeypatch):
    objects = render({"environmentPolicy": POLICY})
    for obj in objects:
        kubernetes_validate.validate(obj, "1.33", strict=True)
    [policy] = by_kind(objects, "ValidatingAdmissionPolicy")
    [binding] = by_kind(objects, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}
    assert policy["spec"]["matchConstraints"]["resourceRules"][0]["operations"] == ["CREATE", "UPDATE"]
    operator_policy = loaded_config(objects, tmp_path, monkeypatch).environment_policy
    assert operator_policy is not None
    for namespace in ("agents", "agents-dev", "elsewhere"):
        for environment in ("test", "prod"):
            allowed, message = admission_verdict(policy, namespace, environment)
            assert allowed == (environment in operator_policy.allowed(namespace)), (namespace, environment)
            assert (
                message
                == f"namespace {namespace} may not ask for the {environment} environment (engram's environmentPolicy)"
            )
    assert admission_verdict(policy, "agents-dev", "prod")[0] is False


def test_without_a_policy_or_admission_no_admission_objects_are_rendered():
    assert not [o for o in render() if o["kind"].startswith("ValidatingAdmission")]
    quiet = render({"environmentPolicy": {**POLICY, "admission": False}})
    assert not [o for o in quiet if o["kind"].startswith("ValidatingAdmission")]


def test_the_chart_takes_a_parent_charts_global_values():
    assert by_kind(render({"global": {"imageRegistry": "registry.example"}}), "Deployment")


def test_a_digest_pins_the_image_and_pull_secrets_reach_operator_and_tenants(tmp_path, monkeypatch):
    digest = "sha256:" + "a" * 64
    objects = render({"image": {"repository": "registry.example/engram", "digest": digest, "pullSecrets": ["regcred"]}})
    [deployment] = by_kind(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == f"registry.example/engram@{digest}"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    config = loaded_config(objects, tmp_path, monkeypatch)
    assert config.image == f"registry.example/engram@{digest}" and config.image_pull_secrets == ["regcred"]
    with pytest.raises(helm.HelmValuesError):
        render({"image": {"repository": "engram", "digest": "latest"}})


def test_the_operators_metrics_are_served_and_a_service_monitor_finds_them_when_asked():
    objects = render()
    [deployment] = by_kind(objects, "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert "--metrics-port=9090" in container["args"]
    assert {"name": "metrics", "containerPort": 9090} in container["ports"]
    [service] = [s for s in by_kind(objects, "Service") if s["metadata"]["name"].endswith("-metrics")]
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 9090, "targetPort": "metrics"}]
    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert not by_kind(objects, "ServiceMonitor")
    monitored = render({"operator": {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}}}})
    [monitor] = by_kind(monitored, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"] == [{"port": "metrics", "path": "/metrics", "interval": "30s"}]


def test_the_documented_migrate_job_is_a_valid_job_of_the_chart_image_and_admin_secret():
    """docs/examples/migrate-job.yaml: `engram migrate` in the cluster, for a server no workstation reaches."""
    job = yaml.safe_load((ROOT / "docs" / "examples" / "migrate-job.yaml").read_text())
    kubernetes_validate.validate(job, "1.33", strict=True)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["migrate"]  # the image's entrypoint is `engram`
    env = {e["name"]: e for e in container["env"]}
    assert env["ENGRAM_ENVIRONMENT"]["value"] in ("test", "prod")
    assert env["ENGRAM_DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {"name": "pg-prod-admin", "key": "dsn"}
