"""Every object the operator builds validates against the Kubernetes schemas, offline and strictly."""

import dataclasses
import json

import kubernetes_validate
import pytest

from engram_operator.manifests import (
    DATABASE_CA_PATH,
    TenantView,
    ingress_url,
    render_backup_cronjob,
    render_client_secret,
    render_cronjob,
    render_database_secret,
    render_deployment,
    render_ingress,
    render_network_policy,
    render_service,
    secret_values,
)

K8S_VERSION = "1.33"
SPEC = {
    "environment": "prod",
    "replicas": 2,
    "embedding": {"model": "use-multilingual-v3"},
    "retrieval": {"weights": {"vector": 0.6, "keyword": 0.3, "rule": 0.1}, "topK": 8},
    "forgetting": {"schedule": "0 4 * * *", "threshold": 0.05, "retentionDays": 14},
    "llm": {"model": "openai/gpt-4o-mini", "secretRef": {"name": "openai"}},
}
VIEW = TenantView(name="support-bot", namespace="agents", environment="prod", image="engram:0.1.0", spec=SPEC)
BUILT = {
    "database-secret": render_database_secret(VIEW, "postgresql://r:p@pg:5432/engram"),
    "client-secret": render_client_secret(VIEW, "ek.support-bot.x", "2026-12-04"),
    "deployment": render_deployment(VIEW),
    "service": render_service(VIEW),
    "cronjob": render_cronjob(VIEW),
    "networkpolicy": render_network_policy(VIEW),
}


def pod_of(built: dict) -> dict:
    """The pod spec of a Deployment or of a CronJob's jobs."""
    if built["kind"] == "Deployment":
        return built["spec"]["template"]["spec"]
    return built["spec"]["jobTemplate"]["spec"]["template"]["spec"]


@pytest.mark.parametrize("kind", sorted(BUILT))
def test_children_validate_against_kubernetes_schemas(kind):
    kubernetes_validate.validate(BUILT[kind], K8S_VERSION, strict=True)


def test_the_deployment_serves_one_tenant_as_non_root_with_probes():
    pod = BUILT["deployment"]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["ENGRAM_TENANT"]["value"] == "support-bot" and env["ENGRAM_ENVIRONMENT"]["value"] == "prod"
    assert env["ENGRAM_DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {"name": VIEW.database_secret_name, "key": "dsn"}
    assert env["ENGRAM_RETRIEVAL__VECTOR_WEIGHT"]["value"] == "0.6"
    assert env["ENGRAM_LLM__API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "openai", "key": "api-key"}
    assert env["ENGRAM_LIFECYCLE__SCHEDULER_ENABLED"]["value"] == "false"
    assert container["securityContext"]["runAsNonRoot"] and container["securityContext"]["readOnlyRootFilesystem"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert BUILT["deployment"]["spec"]["replicas"] == 2
    annotations = BUILT["deployment"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/path"] == "/metrics" and annotations["prometheus.io/port"] == "8080"


def test_the_cronjob_runs_forgetting_and_consolidation_on_the_spec_schedule():
    spec = BUILT["cronjob"]["spec"]
    assert spec["schedule"] == "0 4 * * *" and spec["concurrencyPolicy"] == "Forbid"
    command = spec["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[-1] == "engram forget --tenant support-bot && engram consolidate --tenant support-bot"


def test_a_database_ca_is_in_the_secret_and_mounted_where_the_dsn_names_it():
    ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    view = dataclasses.replace(VIEW, database_ca=ca)
    secret = secret_values(render_database_secret(view, "postgresql://r:p@pg/engram?sslrootcert=x"))
    assert secret["ca.crt"] == ca
    for built in (render_deployment(view), render_cronjob(view)):
        kubernetes_validate.validate(built, K8S_VERSION, strict=True)
        pod = pod_of(built)
        [volume] = [v for v in pod["volumes"] if v["name"] == "database-ca"]
        assert volume["secret"] == {
            "secretName": view.database_secret_name,
            "items": [{"key": "ca.crt", "path": "ca.crt"}],
            "defaultMode": 0o444,
        }
        [mount] = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "database-ca"]
        assert f"{mount['mountPath']}/ca.crt" == DATABASE_CA_PATH and mount["readOnly"]
    without = render_deployment(VIEW)["spec"]["template"]["spec"]
    assert [v["name"] for v in without["volumes"]] == ["tmp"] and "ca.crt" not in secret_values(
        BUILT["database-secret"]
    )


def pods() -> dict[str, dict]:
    return {"deployment": pod_of(BUILT["deployment"]), "cronjob": pod_of(BUILT["cronjob"])}


@pytest.mark.parametrize("kind", ["deployment", "cronjob"])
def test_tenant_pods_run_hardened(kind):
    pod = pods()[kind]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "fsGroup": 10001,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    [container] = pod["containers"]
    assert container["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 10001,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def test_the_network_policy_admits_only_the_tenants_namespace_on_the_service_port():
    spec = BUILT["networkpolicy"]["spec"]
    assert spec["podSelector"] == {"matchLabels": VIEW.selector} and spec["policyTypes"] == ["Ingress"]
    assert spec["ingress"] == [{"from": [{"podSelector": {}}], "ports": [{"port": 8080, "protocol": "TCP"}]}]


def test_the_agents_secret_opens_no_database_and_the_services_holds_no_key():
    client = secret_values(BUILT["client-secret"])
    assert client == {
        "api-key": "ek.support-bot.x",
        "mcp-url": "http://engram-support-bot.agents.svc:8080/t/support-bot/mcp",
        "rest-url": "http://engram-support-bot.agents.svc:8080/t/support-bot/v1",
    }
    assert BUILT["client-secret"]["metadata"]["annotations"] == {"memory.engram.dev/key-rotation": "2026-12-04"}
    assert secret_values(BUILT["database-secret"]) == {"dsn": "postgresql://r:p@pg:5432/engram"}
    assert VIEW.client_secret_name != VIEW.database_secret_name
    # The pods read only the database Secret.
    for built in (BUILT["deployment"], BUILT["cronjob"]):
        assert VIEW.client_secret_name not in json.dumps(built)


def test_new_credentials_change_the_pod_template_so_the_pods_roll():
    def digest_of(view: TenantView) -> str:
        return render_deployment(view)["spec"]["template"]["metadata"]["annotations"][
            "memory.engram.dev/credentials-digest"
        ]

    old, new = (dataclasses.replace(VIEW, credentials_digest=d) for d in ("1f2e3d", "4c5b6a"))
    assert digest_of(old) == "1f2e3d" and digest_of(new) == "4c5b6a"


def test_each_pod_keeps_the_pool_the_spec_gives_and_the_role_has_room_for_them_all():
    from engram_operator.reconcile import connection_limit

    for built in (render_deployment(VIEW), render_cronjob(VIEW)):
        pod = pod_of(built)
        env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
        assert env["ENGRAM_POOL_MAX_SIZE"] == "5"
    sized = dataclasses.replace(VIEW, spec={**SPEC, "database": {"poolSize": 3}})
    env = {
        e["name"]: e.get("value") for e in render_deployment(sized)["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["ENGRAM_POOL_MAX_SIZE"] == "3"
    assert connection_limit({"replicas": 2}) == (2 + 1) * 5 + 2
    assert connection_limit({"replicas": 4, "database": {"poolSize": 3}}) == (4 + 1) * 3 + 2
    assert connection_limit({"database": {"connectionLimit": 40}}) == 40


def test_the_lifecycle_job_has_resources_and_deadlines():
    spec = BUILT["cronjob"]["spec"]
    job = spec["jobTemplate"]["spec"]
    [container] = job["template"]["spec"]["containers"]
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
    assert spec["startingDeadlineSeconds"] == job["activeDeadlineSeconds"] == 3600
    assert job["ttlSecondsAfterFinished"] > 0
    sized = dataclasses.replace(VIEW, spec={**SPEC, "forgetting": {"resources": {"limits": {"memory": "2Gi"}}}})
    sized_container = render_cronjob(sized)["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert sized_container["resources"] == {"limits": {"memory": "2Gi"}}


def test_replicas_are_spread_over_nodes_only_when_there_are_several():
    [spread] = BUILT["deployment"]["spec"]["template"]["spec"]["topologySpreadConstraints"]  # SPEC: 2 replicas
    assert spread["topologyKey"] == "kubernetes.io/hostname" and spread["labelSelector"]["matchLabels"] == VIEW.selector
    single = dataclasses.replace(VIEW, spec={**SPEC, "replicas": 1})
    assert "topologySpreadConstraints" not in render_deployment(single)["spec"]["template"]["spec"]


def test_litellm_models_get_their_api_base_and_key_from_the_spec_and_its_secrets(monkeypatch):
    spec = {
        **SPEC,
        "embedding": {
            "model": "litellm:openai/bge-m3",
            "dimension": 1024,
            "apiBase": "http://embeddings.models.svc:8000/v1",
            "secretRef": {"name": "embedding-api"},
        },
        "llm": {
            "model": "openai/qwen3",
            "apiBase": "http://vllm.models.svc:8000/v1",
            "secretRef": {"name": "vllm", "key": "token"},
        },
    }
    view = dataclasses.replace(VIEW, spec=spec, embedding_model="litellm:openai/bge-m3")
    env = {e["name"]: e for e in render_deployment(view)["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["ENGRAM_EMBEDDING_API_BASE"]["value"] == "http://embeddings.models.svc:8000/v1"
    assert env["ENGRAM_EMBEDDING_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "embedding-api", "key": "api-key"}
    assert env["ENGRAM_LLM__API_BASE"]["value"] == "http://vllm.models.svc:8000/v1"
    assert env["ENGRAM_LLM__API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "vllm", "key": "token"}
    from engram.settings import Settings

    for name in ("ENGRAM_EMBEDDING_API_BASE", "ENGRAM_LLM__API_BASE"):  # the names the service reads
        monkeypatch.setenv(name, env[name]["value"])
    monkeypatch.setenv("ENGRAM_EMBEDDING_API_KEY", "k1")
    monkeypatch.setenv("ENGRAM_LLM__API_KEY", "k2")
    settings = Settings()
    assert settings.embedding_api_base == "http://embeddings.models.svc:8000/v1"
    assert settings.llm.api_base == "http://vllm.models.svc:8000/v1"
    assert settings.embedding_api_key.get_secret_value() == "k1" and settings.llm.api_key.get_secret_value() == "k2"


def test_the_specs_scheduling_and_the_pull_secrets_reach_both_pods():
    scheduling = {
        "nodeSelector": {"pool": "memory"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "memory", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                    }
                ]
            }
        },
        "priorityClassName": "agents-high",
    }
    view = dataclasses.replace(VIEW, spec={**SPEC, "scheduling": scheduling}, image_pull_secrets=("registry",))
    for built in (render_deployment(view), render_cronjob(view)):
        kubernetes_validate.validate(built, K8S_VERSION, strict=True)
        pod = pod_of(built)
        assert {k: pod[k] for k in scheduling} == scheduling
        assert pod["imagePullSecrets"] == [{"name": "registry"}]
    plain = pods()["deployment"]
    assert not {"nodeSelector", "tolerations", "affinity", "priorityClassName", "imagePullSecrets"} & set(plain)


def test_an_ingress_exposes_only_the_tenants_paths_over_tls_and_the_urls_follow():
    spec = {
        **SPEC,
        "networkPolicy": {"enabled": True},
        "ingress": {
            "enabled": True,
            "host": "memory.example.com",
            "className": "nginx",
            "tlsSecretName": "memory-example-tls",
            "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt"},
            "controllerNamespace": "ingress-nginx",
        },
    }
    view = dataclasses.replace(VIEW, spec=spec, public_url=ingress_url(spec) or "")
    built = render_ingress(view)
    kubernetes_validate.validate(built, K8S_VERSION, strict=True)
    [rule] = built["spec"]["rules"]
    assert rule["host"] == "memory.example.com"
    assert rule["http"]["paths"] == [
        {
            "path": "/t/support-bot",
            "pathType": "Prefix",
            "backend": {"service": {"name": "engram-support-bot", "port": {"name": "http"}}},
        }
    ]
    assert built["spec"]["tls"] == [{"hosts": ["memory.example.com"], "secretName": "memory-example-tls"}]
    assert built["spec"]["ingressClassName"] == "nginx"
    assert built["metadata"]["annotations"] == {"cert-manager.io/cluster-issuer": "letsencrypt"}
    assert view.mcp_url() == "https://memory.example.com/t/support-bot/mcp"
    env = {e["name"]: e.get("value") for e in pod_of(render_deployment(view))["containers"][0]["env"]}
    assert "memory.example.com" in json.loads(env["ENGRAM_ALLOWED_HOSTS"])  # the Host header it arrives with
    assert env["ENGRAM_PUBLIC_URL"] == "https://memory.example.com"
    # With a NetworkPolicy, the controller's pods may reach the service too; nobody else's.
    peers = render_network_policy(view)["spec"]["ingress"][0]["from"]
    assert peers == [
        {"podSelector": {}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}},
    ]
    plain = {**spec, "ingress": {"enabled": True, "host": "memory.example.com"}}
    assert (
        ingress_url(plain) == "http://memory.example.com"
        and "tls" not in render_ingress(dataclasses.replace(VIEW, spec=plain))["spec"]
    )
    assert ingress_url(SPEC) is None


def test_a_backup_job_dumps_the_tenants_schema_as_its_role_into_the_claim():
    spec = {**SPEC, "backup": {"enabled": True, "persistentVolumeClaim": "memory-backups", "keep": 3}}
    view = dataclasses.replace(VIEW, spec=spec, database_ca="-----BEGIN CERTIFICATE-----\nx\n")
    built = render_backup_cronjob(view)
    kubernetes_validate.validate(built, K8S_VERSION, strict=True)
    assert built["metadata"]["name"] == "engram-support-bot-backup" and built["spec"]["schedule"] == "30 2 * * *"
    pod = pod_of(built)
    [container] = pod["containers"]
    assert container["image"] == "postgres:18-alpine"
    script = container["command"][-1]
    assert "--schema=tenant_support_bot --format=custom" in script and "tail -n +4" in script
    env = {e["name"]: e for e in container["env"]}
    assert env["DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {"name": VIEW.database_secret_name, "key": "dsn"}
    assert {"name": "backup", "persistentVolumeClaim": {"claimName": "memory-backups"}} in pod["volumes"]
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/tmp", "/backup", "/etc/engram/database"}
    assert container["securityContext"]["runAsNonRoot"] and container["securityContext"]["readOnlyRootFilesystem"]
    assert pod["automountServiceAccountToken"] is False
