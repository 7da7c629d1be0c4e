"""`make mutants`: one-line breakages of promises the operator and the write path make, each applied in turn; the
tests named beside it must fail. Prints each mutant as killed or SURVIVED and exits 1 if any
survived. A mutant whose text is no longer in the code is reported (the code moved on), not run.

    python -m tests.mutants [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPERATOR = "operator/engram_operator"


@dataclass(frozen=True)
class Mutant:
    what: str
    path: str
    before: str
    after: str
    tests: tuple[str, ...]  # pytest's arguments: files, -k expressions


MANIFESTS, RECONCILE, STATUS = f"{OPERATOR}/manifests.py", f"{OPERATOR}/reconcile.py", f"{OPERATOR}/status.py"
PROVISION, HANDLERS = f"{OPERATOR}/provision.py", f"{OPERATOR}/handlers.py"
DRIFT, KUBE = f"{OPERATOR}/drift.py", f"{OPERATOR}/kube.py"
ROLLOUTS = f"{OPERATOR}/rollouts.py"
DUMPS = "service/engram/store/dumps.py"
TENANTS_SERVICE, BACKUP_TESTS = "service/engram/services/tenants.py", "tests/operator/test_backup.py"
TENANT_META, DAY2_TESTS = "service/engram/store/tenant_meta.py", "tests/operator/test_day2.py"
MAIN, LEADERSHIP, PLACEMENT = f"{OPERATOR}/__main__.py", f"{OPERATOR}/leadership.py", f"{OPERATOR}/placement.py"
UNIT = ("tests/operator/test_manifests.py", "tests/operator/test_status.py", "tests/operator/test_backoff.py")
OPERATOR_TESTS = "tests/operator/test_operator.py"
PROVISION_TESTS = "tests/operator/test_provision.py"
# The write path (issue 27).
DOMAIN = "service/engram/domain"
RELATIONS, SUBJECTS, CLAIMS = f"{DOMAIN}/relations.py", f"{DOMAIN}/subjects.py", f"{DOMAIN}/claims.py"
STORING, FUSION, DECISIONS = f"{DOMAIN}/storing.py", f"{DOMAIN}/fusion.py", f"{DOMAIN}/decisions.py"
DEDUP = "service/engram/services/dedup.py"
WRITE_UNIT = ("tests/unit/test_relations.py", "tests/unit/test_utterance.py", "tests/unit/test_rule_judge.py")
STORIES = "tests/integration/test_write_stories.py"
# Users inside a tenant (issue 28).
TENANCY, USERS = f"{DOMAIN}/tenancy.py", ("tests/integration/test_users.py",)
ERASURE_SERVICE, ERASURE_STORE = "service/engram/services/erasure.py", "service/engram/store/erasure.py"
ERASURE, ADMIN = ("tests/integration/test_erasure.py",), ("tests/integration/test_admin.py",)
RETENTION = ("tests/unit/test_retention.py", "tests/integration/test_retention.py")
# No tenant slowing another (issue 28, item 8).
SERVER, ADMISSION = "service/engram/api/server.py", ("tests/integration/test_admission.py",)
CONNECTIONS, FAIR = ("tests/integration/test_connection_limits.py",), ("tests/unit/test_fair_share.py",)
INSTANTS = ("tests/unit/test_instants.py",)
INVISIBLE = ("tests/unit/test_invisible_matches.py",)
OUTAGE_UNIT = ("tests/unit/test_outage_logs.py",)
DATABASE_OUTAGE = ("tests/integration/test_outages.py", "-k", "thirty and database")
# The second vector channel and recall as people type (issue 29).
CHANNEL = ("tests/integration/test_retrieval_channel.py",)
RETRIEVAL_STORE, RETRIEVAL_SERVICE = "service/engram/store/retrieval.py", "service/engram/services/retrieval.py"
CHANNEL_MIGRATION = "service/engram/store/migrations/tenant/0013_retrieval_vectors.sql"
IDENTIFIERS = ("tests/unit/test_identifiers.py", "tests/integration/test_identifier_forms.py")
MUTANTS = [
    Mutant(
        "NetworkPolicy ingress open to every pod of every namespace",
        MANIFESTS,
        'peers: list[dict[str, Any]] = [{"podSelector": {}}]',
        'peers: list[dict[str, Any]] = [{"namespaceSelector": {}}]',
        UNIT,
    ),
    Mutant(
        "tenant container keeps its capabilities",
        MANIFESTS,
        '"capabilities": {"drop": ["ALL"]},',
        '"capabilities": {"drop": []},',
        UNIT,
    ),
    Mutant(
        "tenant container may escalate privileges",
        MANIFESTS,
        '"allowPrivilegeEscalation": False,',
        '"allowPrivilegeEscalation": True,',
        UNIT,
    ),
    Mutant(
        "no seccomp profile",
        MANIFESTS,
        '"seccompProfile": {"type": "RuntimeDefault"}',
        '"seccompProfile": {"type": "Unconfined"}',
        UNIT,
    ),
    Mutant(
        "service account token mounted",
        MANIFESTS,
        '"automountServiceAccountToken": False,',
        '"automountServiceAccountToken": True,',
        UNIT,
    ),
    Mutant(
        "pods never roll on new credentials (constant digest)",
        MANIFESTS,
        '"memory.engram.dev/credentials-digest": t.credentials_digest,',
        '"memory.engram.dev/credentials-digest": "0",',
        UNIT,
    ),
    Mutant(
        "constant backoff",
        HANDLERS,
        "return bound * (0.5 + 0.5 * draw())",
        "return 5.0",
        UNIT,
    ),
    Mutant(
        "backoff without jitter",
        HANDLERS,
        "return bound * (0.5 + 0.5 * draw())",
        "return bound",
        UNIT,
    ),
    Mutant(
        "no Degraded for partially available replicas",
        STATUS,
        'return Check(True, "PartiallyAvailable", counted), Check(True, "ReplicasUnavailable", counted)',
        'return Check(True, "PartiallyAvailable", counted), healthy',
        UNIT,
    ),
    Mutant(
        "no Suspended phase",
        STATUS,
        'return "Suspended", ready["message"]',
        'return "Provisioning", ready["message"]',
        UNIT,
    ),
    Mutant(
        "embedding-model change not reported as pending",
        RECONCILE,
        "if provisioned.embedding_model != model:",
        "if False:",
        (OPERATOR_TESTS, "-k", "new_embedding_model"),
    ),
    Mutant(
        "the Deployment takes the spec's model instead of the stored one",
        RECONCILE,
        "embedding_model=provisioned.embedding_model,",
        "embedding_model=model,",
        (OPERATOR_TESTS, "-k", "new_embedding_model"),
    ),
    Mutant(
        "no per-tenant lock in the database",
        PROVISION,
        "take turns.\n            await conn.execute("
        '"SELECT pg_advisory_xact_lock(hashtext($1))", tenant_lock(tenant))',
        "take turns.\n            pass",
        (PROVISION_TESTS, "-k", "five_at_once"),
    ),
    Mutant(
        "shared catalog rows written without taking turns",
        PROVISION,
        'await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", _SHARED_CATALOG_LOCK)',
        "return",
        (PROVISION_TESTS, "-k", "fifty"),
    ),
    Mutant(
        "tenant DSN drops the admin DSN's parameters",
        PROVISION,
        "params = {k: v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in _OPERATOR_LOCAL}",
        "params: dict[str, str] = {}",
        (PROVISION_TESTS, "-k", "dsn or tls"),
    ),
    Mutant(
        "the operator ignores the environment policy",
        RECONCILE,
        "if policy is not None and environment not in policy.allowed(tenant.namespace):",
        "if False:",
        (OPERATOR_TESTS, "-k", "policy"),
    ),
    Mutant(
        "the admission policy admits every environment",
        "charts/engram/templates/admission.yaml",
        '- expression: "object.spec.environment in variables.allowed"',
        '- expression: "true"',
        ("tests/operator/test_chart.py", "-k", "environment_policy"),
    ),
    Mutant(
        "tenant roles without a connection limit",
        PROVISION,
        'options = f"LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT CONNECTION LIMIT {limit}"',
        'options = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT"',
        (PROVISION_TESTS, "-k", "connection_limit"),
    ),
    Mutant(
        "a changed connection limit is not applied",
        PROVISION,
        'elif attributes["rolconnlimit"] != limit:',
        "elif False:",
        (PROVISION_TESTS, "-k", "connection_limit"),
    ),
    Mutant(
        "the pods' pool ignores the spec",
        MANIFESTS,
        '{"name": "ENGRAM_POOL_MAX_SIZE", "value": str(pool_size(t.spec))},',
        '{"name": "ENGRAM_POOL_MAX_SIZE", "value": "10"},',
        UNIT,
    ),
    Mutant(
        "the lifecycle job runs without a deadline",
        MANIFESTS,
        '"activeDeadlineSeconds": deadline,',
        "",
        UNIT,
    ),
    Mutant(
        "replicas not spread over nodes",
        MANIFESTS,
        "if most_replicas(t.spec) <= 1:",
        "if True:",
        UNIT,
    ),
    Mutant(
        "a litellm embedding model gets no API base or key",
        MANIFESTS,
        'env += _api_env("ENGRAM_EMBEDDING_API_BASE", "ENGRAM_EMBEDDING_API_KEY", embedding)',
        "pass",
        UNIT,
    ),
    Mutant(
        "the spec's scheduling does not reach the pods",
        MANIFESTS,
        "} | _scheduling(t)",
        "}",
        UNIT,
    ),
    Mutant(
        "the configured pull secrets do not reach the pods",
        RECONCILE,
        "image_pull_secrets=tuple(self.config.image_pull_secrets),",
        "",
        (OPERATOR_TESTS, "-k", "tls_instance"),
    ),
    Mutant(
        "password drift is never repaired",
        PROVISION,
        "if not new_password and not await _logs_in(instance, role, password):",
        "if False:",
        (PROVISION_TESTS, "-k", "drifted"),
    ),
    Mutant(
        "a repair always rewrites the password",
        PROVISION,
        "if not new_password and not await _logs_in(instance, role, password):",
        "if True:",
        (PROVISION_TESTS, "-k", "fifty"),
    ),
    Mutant(
        "a refused tenant is not Stalled",
        STATUS,
        '"Stalled": Check(phase == "Failed",',
        '"Stalled": Check(False,',
        UNIT,
    ),
    Mutant(
        "an unhandled generation is not Reconciling",
        STATUS,
        "busy = phase in _IN_PROGRESS or behind",
        "busy = phase in _IN_PROGRESS",
        UNIT,
    ),
    Mutant(
        "reconciliations are not timed",
        HANDLERS,
        'with metrics.timed(ns, name, "drift" if drift else "change"):',
        "with contextlib.nullcontext():",
        ("tests/operator/test_entrypoint.py", "-k", "serves_tenants"),
    ),
    Mutant(
        "refusals are not counted",
        HANDLERS,
        'metrics.failed(ns, name, "refused")',
        "pass",
        (OPERATOR_TESTS, "-k", "policy"),
    ),
    Mutant(
        "quantities compared as text (a canonical `1` is drift from `1000m`)",
        DRIFT,
        "return _same_quantity(desired, live)",
        "return bool(desired == live)",
        ("tests/operator/test_drift.py", "tests/operator/test_day2.py"),
    ),
    Mutant(
        "a field removed from the spec stays on the child (no digest of the applied manifest)",
        KUBE,
        "manifest = with_digest(manifest)",
        "pass",
        ("tests/operator/test_day2.py", "-k", "drift"),
    ),
    Mutant(
        "the operator owns replicas under an autoscaler",
        MANIFESTS,
        'replicas = {} if autoscaling(t.spec) else {"replicas": t.spec.get("replicas", 1)}',
        'replicas = {"replicas": t.spec.get("replicas", 1)}',
        ("tests/operator/test_day2.py", "-k", "autoscal"),
    ),
    Mutant(
        "no disruption budget for several pods",
        MANIFESTS,
        "return fewest_replicas(spec) > 1",
        "return False",
        ("tests/operator/test_day2.py", "-k", "autoscal"),
    ),
    Mutant(
        "the paused annotation is ignored",
        RECONCILE,
        'return self.annotations.get(PAUSED) == "true"',
        "return False",
        ("tests/operator/test_day2.py", "-k", "pause"),
    ),
    Mutant(
        "a second operator acts beside the first (no leader election)",
        MAIN,
        "if not config.leader_election.enabled:",
        "if True:",
        ("tests/operator/test_entrypoint.py", "-k", "second_operator"),
    ),
    Mutant(
        "a candidate takes a lease that is still held",
        LEADERSHIP,
        "if holder and not ours and time.monotonic() < self._seen.at + held_for:",
        "if False:",
        ("tests/operator/test_leadership.py",),
    ),
    Mutant(
        "a clean stop does not hand the lease back",
        LEADERSHIP,
        'spec = {"holderIdentity": None, "leaseDurationSeconds": 1, "renewTime": _now()}',
        "return",
        ("tests/operator/test_leadership.py", "-k", "released"),
    ),
    Mutant(
        "every unpinned tenant goes to the first instance (no balancing)",
        PLACEMENT,
        "return min(roomy, key=lambda s: (s.tenants, s.instance)).instance",
        "return min(s.instance for s in roomy)",
        ("tests/operator/test_placement.py", "tests/operator/test_identity.py", "-k", "emptiest"),
    ),
    Mutant(
        "a re-created tenant is placed anew instead of going back to its data",
        PLACEMENT,
        "holding = sorted(s.instance for s in surveys if s.holds_tenant)",
        "holding: list[str] = []",
        ("tests/operator/test_identity.py", "-k", "recreated"),
    ),
    Mutant(
        "the placement is not recorded on the resource",
        RECONCILE,
        "if tenant.annotations.get(INSTANCE) != instance.name:",
        "if False:",
        ("tests/operator/test_identity.py", "-k", "emptiest"),
    ),
    Mutant(
        "a deletion without a record of the placement leaves the schema behind",
        RECONCILE,
        "placed = next((s.instance for s in await self._find(tenant, claim) if s.holds_tenant), None)",
        "placed = None",
        ("tests/operator/test_identity.py", "-k", "without_any_record"),
    ),
    Mutant(
        "claims do not name the cluster",
        RECONCILE,
        'return Claim(f"k8s:{self._cluster_id}/{tenant.namespace}/{tenant.name}", former)',
        "return Claim(former)",
        ("tests/operator/test_identity.py", "-k", "emptiest"),
    ),
    Mutant(
        "the pods read the DSN from the agents' Secret",
        MANIFESTS,
        '"ENGRAM_DATABASE_URL",\n            "valueFrom": {"secretKeyRef": {"name": t.database_secret_name,',
        '"ENGRAM_DATABASE_URL",\n            "valueFrom": {"secretKeyRef": {"name": t.client_secret_name,',
        UNIT,
    ),
    Mutant(
        "a rotation revokes the keys before it at once (no overlap)",
        RECONCILE,
        'overlap = float((tenant.spec.get("apiKey") or {}).get("rotationOverlapSeconds", DEFAULT_KEY_OVERLAP_SECONDS))',
        "overlap = 0.0",
        (DAY2_TESTS, "-k", "rotated"),
    ),
    Mutant(
        "the same rotate-key value rotates the key on every pass",
        RECONCILE,
        "elif requested and requested != handled:",
        "elif requested:",
        (DAY2_TESTS, "-k", "rotated"),
    ),
    Mutant(
        "the service refuses a retiring key during its overlap",
        TENANT_META,
        'WHERE key_hash = $1 AND (revoked_at IS NULL OR revoked_at > now())""",',
        'WHERE key_hash = $1 AND revoked_at IS NULL""",',
        (DAY2_TESTS, "-k", "rotated"),
    ),
    Mutant(
        "a Secret from before the split is ignored (new password and key)",
        RECONCILE,
        "given = credentials_of(tenant, database or legacy, client or legacy)",
        "given = credentials_of(tenant, database, client)",
        (DAY2_TESTS, "-k", "split"),
    ),
    Mutant(
        "the Ingress exposes every path of the host",
        MANIFESTS,
        '"http": {"paths": [{"path": f"/t/{t.name}", "pathType": "Prefix", "backend": backend}]},',
        '"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]},',
        UNIT,
    ),
    Mutant(
        "an Ingress with TLS is announced as http",
        MANIFESTS,
        "return f\"{'https' if wanted.get('tlsSecretName') else 'http'}://{wanted['host']}\"",
        "return f\"http://{wanted['host']}\"",
        UNIT,
    ),
    Mutant(
        "the URLs ignore the Ingress",
        RECONCILE,
        "public_url=ingress_url(tenant.spec)",
        "public_url=None",
        (DAY2_TESTS, "-k", "ingress"),
    ),
    Mutant(
        "the NetworkPolicy keeps the ingress controller out",
        MANIFESTS,
        "    if controller:\n",
        "    if False:\n",
        UNIT,
    ),
    Mutant(
        "an upgrade rolls every tenant at once",
        RECONCILE,
        "            if waiting is not None:\n",
        "            if False:\n",
        (DAY2_TESTS, "-k", "upgrade"),
    ),
    Mutant(
        "a finished rollout never frees its slot",
        ROLLOUTS,
        "if deployment is None or rolled_out(deployment):",
        "if deployment is None:",
        (DAY2_TESTS, "-k", "upgrade"),
    ),
    Mutant(
        "a rollout counts as done with old pods still running",
        ROLLOUTS,
        'no_old_pods = (status.get("replicas") or 0) <= updated',
        "no_old_pods = True",
        ("tests/operator/test_rollouts.py",),
    ),
    Mutant(
        "backups are never pruned",
        MANIFESTS,
        "tail -n +{keep + 1}",
        "tail -n +{keep + 100}",
        (BACKUP_TESTS,),
    ),
    Mutant(
        "a restore that fails half-way keeps what it loaded",
        TENANTS_SERVICE,
        "async with self._pool.acquire() as conn, conn.transaction():\n            await memories_store.lock_writes",
        "async with self._pool.acquire() as conn:\n            await memories_store.lock_writes",
        (BACKUP_TESTS,),
    ),
    Mutant(
        "a restore mixes a dump into a tenant's own memories",
        TENANTS_SERVICE,
        'if await conn.fetchval(f"SELECT EXISTS (SELECT 1 FROM {context.schema}.memories)"):',
        "if False:",
        (BACKUP_TESTS,),
    ),
    Mutant(
        "the backup job dumps the whole database",
        MANIFESTS,
        "--schema={schema} --format=custom",
        "--format=custom",
        UNIT,
    ),
    Mutant(
        "a RolloutPending event on every retry",
        HANDLERS,
        "if not drift and not _was_waiting(published):",
        "if not drift:",
        (DAY2_TESTS, "-k", "upgrade"),
    ),
    Mutant(
        "the old Secret is deleted while the waiting pods still read it",
        RECONCILE,
        "            and rollout_pending is None\n",
        "",
        (DAY2_TESTS, "-k", "upgrade"),
    ),
    Mutant(
        "a leader whose API server hangs acts on past the renew deadline",
        LEADERSHIP,
        "async with asyncio.timeout(max(left, 0.0)):",
        "async with asyncio.timeout(None):",
        ("tests/operator/test_leadership.py", "-k", "stops_answering"),
    ),
    Mutant(
        "a namesake the operator did not make is deleted",
        KUBE,
        '        if not any(o.get("uid") == owner_uid for o in owners):\n            return False\n',
        "",
        (DAY2_TESTS, "-k", "namesake"),
    ),
    Mutant(
        "a restore loads vectors of another embedding model",
        DUMPS,
        "    if found != model:\n",
        "    if False:\n",
        (BACKUP_TESTS,),
    ),
    Mutant(
        "a half-written dump of an earlier run stays forever",
        MANIFESTS,
        """'find "$dir" -maxdepth 1 -name ".partial-*" -mmin +60 -exec rm -f {} +',""",
        "",
        (BACKUP_TESTS,),
    ),
    Mutant(
        "an empty map in the spec is drift forever",
        DRIFT,
        '    if live is None and desired in ({}, [], "", None):\n        return True',
        "    pass",
        ("tests/operator/test_drift.py",),
    ),
    Mutant(
        "any annotation reaches the Ingress (a controller's snippets)",
        RECONCILE,
        "        if refused:\n",
        "        if False:\n",
        (DAY2_TESTS, "-k", "ingress"),
    ),
    Mutant(
        "a tenant is placed where another owner holds its name",
        PLACEMENT,
        "free = [s for s in surveys if not s.name_taken]",
        "free = list(surveys)",
        ("tests/operator/test_placement.py",),
    ),
    Mutant(
        "turning autoscaling on drops the Deployment to one replica",
        RECONCILE,
        "        if handing_over and drifted(with_digest(deployment), live):\n",
        "        if False:\n",
        (DAY2_TESTS, "-k", "turning"),
    ),
    Mutant(
        "the database CA is not given to the pods",
        RECONCILE,
        "database_ca=ca,",
        "database_ca=None,",
        (OPERATOR_TESTS, "-k", "tls_instance"),
    ),
    # the write path: what is stored is what was said, nothing true retired, the agent settles
    Mutant(
        "a plan retires what is true today",
        RELATIONS,
        "    if new.future != old.future:  # a plan and a fact of today are two facts",
        "    if False:",
        WRITE_UNIT,
    ),
    Mutant(
        "a plan beside a plan is a change",
        RELATIONS,
        "    topic_change = topic_change and not new.future",
        "    topic_change = topic_change or False",
        WRITE_UNIT,
    ),
    Mutant(
        "an uncle is a mother's brother",
        SUBJECTS,
        "    if _terms_differ(a.terms, b.terms):",
        "    if False:",
        WRITE_UNIT,
    ),
    Mutant(
        "two named people are one",
        SUBJECTS,
        "        if a.name != b.name:\n            return Sameness.different",
        "        pass",
        WRITE_UNIT,
    ),
    Mutant(
        "a long chat message is a fact to retire by",
        CLAIMS,
        "    return s.sentences <= 2 and size <= 30",
        "    return True",
        (*WRITE_UNIT, STORIES),
    ),
    Mutant(
        "the first person is stored as said",
        STORING,
        "    content = in_third_person(resolved.text)",
        "    content = resolved.text",
        WRITE_UNIT,
    ),
    Mutant(
        "a date by its name sets no occurred_at",
        STORING,
        "    day = resolved.day or absolute_day(item.content, said)",
        "    day = resolved.day",
        (STORIES,),
    ),
    Mutant(
        "an older memory outranks the newer one",
        FUSION,
        "        standing = round(min(1.0, ceiling / plain), 6) if plain > 0 else 1.0",
        "        standing = 1.0",
        ("tests/unit/test_fusion.py",),
    ),
    Mutant(
        "context outranks evidence",
        FUSION,
        'update={"standing": round(min(h.standing, ceiling / plain), 6) if plain else h.standing}',
        'update={"standing": h.standing}',
        ("tests/unit/test_fusion.py",),
    ),
    Mutant(
        "another person's memory is a candidate",
        DECISIONS,
        "memory.id in seen or looked.someone_else:",
        "memory.id in seen:",
        ("tests/unit/test_dedup_plan.py",),
    ),
    Mutant(
        "a retired memory is a candidate",
        DECISIONS,
        "            if memory.status != Status.active:\n                continue",
        "            pass",
        ("tests/unit/test_dedup_plan.py",),
    ),
    Mutant(
        "candidates unordered",
        DECISIONS,
        "        ranked = sorted(seen.values(), key=lambda c: (not c.marked, -c.similarity))",
        "        ranked = list(seen.values())",
        ("tests/unit/test_dedup_plan.py",),
    ),
    Mutant(
        "replaces ignored beside a judged change",
        DEDUP,
        "by_caller=True) for m in named.values()]",
        "by_caller=True) for m in ()]",
        (STORIES,),
    ),
    Mutant(
        "replaces ignored",
        DEDUP,
        "by_caller=True) for m in replaces)",
        "by_caller=True) for m in ())",
        (STORIES,),
    ),
    Mutant(
        "a user's filter reaches every owner",
        "service/engram/store/filters.py",
        """clauses.append(f"coalesce({alias}.user_id, '') = ANY({params.add(f.owners())}::text[])")""",
        "pass",
        USERS,
    ),
    Mutant(
        "nearest facts of any owner",
        "service/engram/store/memories.py",
        "AND m.layer = t.layer AND {OWNER} = t.owner",
        "AND m.layer = t.layer",
        USERS,
    ),
    Mutant(
        "two users' same text is one duplicate key",
        f"{DOMAIN}/text.py",
        "    if owner:\n        raw",
        "    if False:\n        raw",
        USERS,
    ),
    Mutant(
        "a user reads another's memory",
        TENANCY,
        "memory.user_id in (None, self.user)\n\n    def may_change",
        "True\n\n    def may_change",
        USERS,
    ),
    Mutant(
        "a pinned context acts for anyone",
        TENANCY,
        "if self.user is None or asked in (None, self.user):",
        "if True:",
        USERS,
    ),
    Mutant(
        "a user changes the shared memories",
        TENANCY,
        "return self.user is None or memory.user_id == self.user",
        "return self.user is None or memory.user_id in (None, self.user)",
        USERS,
    ),
    Mutant(
        "replaces names another user's memory",
        "service/engram/services/writes.py",
        "if memory_id not in found or found[memory_id].user_id != item.user_id:",
        "if memory_id not in found:",
        USERS,
    ),
    Mutant(
        "an erasure leaves the history",
        "service/engram/store/erasure.py",
        'history = await conn.execute(f"DELETE FROM {schema}.memory_history WHERE memory_id = ANY($1::uuid[])", ids)',
        'history = "DELETE 0"',
        (*USERS, "-k", "eras"),
    ),
    Mutant(
        "an import brings an erased memory back",
        "service/engram/services/transfer.py",
        "rows = [r for r in rows if r.memory.id not in gone]",
        "gone = set()",
        (*USERS, "-k", "eras"),
    ),
    Mutant(
        "an erasure leaves the cached query vectors",
        ERASURE_SERVICE,
        "cached = await self._cache.drop_prefix(query_cache_prefix(ctx.name, user_id))",
        "cached = 0",
        (*USERS, "-k", "eras"),
    ),
    Mutant(
        "a selection's erasure keeps to active memories",
        ERASURE_SERVICE,
        'return f if "statuses" in f.model_fields_set else f.model_copy(update={"statuses": list(Status)})',
        "return f",
        ERASURE,
    ),
    Mutant(
        "a filter naming a user erases the shared memories too",
        ERASURE_SERVICE,
        "if chosen is not None and (ctx.user is not None or chosen.user_id is not None):",
        "if chosen is not None and ctx.user is not None:",
        ERASURE,
    ),
    Mutant(
        "what was derived from an erased memory stays",
        ERASURE_STORE,
        'SELECT d.id FROM {schema}.memories d WHERE d.derived_from && ARRAY(SELECT id FROM picked)"""',
        'SELECT d.id FROM {schema}.memories d WHERE false"""',
        ERASURE,
    ),
    Mutant(
        "events quoting an erased memory keep its words",
        ERASURE_STORE,
        'WHERE {_quotes("h")} AND {_holds_text("h")}""",',
        'WHERE false AND {_quotes("h")} AND {_holds_text("h")}""",',
        ERASURE,
    ),
    Mutant(
        "the admin API takes a tenant's key",
        "service/engram/api/deps.py",
        "if key_tenant(credentials.credentials) is not None:",
        "if False:",
        ADMIN,
    ),
    Mutant(
        "the admin key is compared loosely",
        "service/engram/api/deps.py",
        "if not hmac.compare_digest(credentials.credentials.encode(), configured.get_secret_value().encode()):",
        "if not configured.get_secret_value().startswith(credentials.credentials[:8]):",
        ADMIN,
    ),
    Mutant(
        "a tenant is created whatever its environment",
        TENANTS_SERVICE,
        "if environment is not None and label != environment:",
        "if False:",
        ADMIN,
    ),
    Mutant(
        "a tenant the operator manages is deleted over the API",
        ERASURE_SERVICE,
        "if registered and holder is not None:",
        "if False:",
        ADMIN,
    ),
    Mutant(
        "a deleted tenant's cached queries stay",
        ERASURE_SERVICE,
        "cached = await self._cache.drop_prefix(tenant_cache_prefix(name))",
        "cached = 0",
        ADMIN,
    ),
    Mutant(
        "a type's lifetime is ignored",
        "service/engram/store/memories.py",
        "OR m.created_at < (SELECT c.before FROM unnest($3::text[], $4::timestamptz[]) AS c(type, before)",
        "OR false AND m.created_at < (SELECT c.before FROM unnest($3::text[], $4::timestamptz[]) AS c(type, before)",
        RETENTION,
    ),
    Mutant(
        "the tenant's purge delay is ignored",
        f"{DOMAIN}/retention.py",
        "purge = retention.purge_after_days if retention.purge_after_days is not None else purge_days",
        "purge = purge_days",
        RETENTION,
    ),
    Mutant(
        "a user's key changes the tenant's retention",
        "service/engram/services/forgetting.py",
        "        if ctx.user is not None:\n            raise Forbidden(",
        "        if False:\n            raise Forbidden(",
        RETENTION,
    ),
    Mutant(
        "the longer lifetime is reported",
        f"{DOMAIN}/retention.py",
        'rules = sorted((days, f"{name} memories") for name, days in limits if days is not None)',
        'rules = sorted(((days, f"{name} memories") for name, days in limits if days is not None), reverse=True)',
        RETENTION,
    ),
    # Dates at the ends of the calendar: refused where they come in, never made from one accepted.
    Mutant(
        "an instant's UTC year goes unchecked",
        f"{DOMAIN}/boundary.py",
        "return EARLIEST.year <= value.year <= LATEST.year and EARLIEST <= aware < _AFTER_LATEST",
        "return EARLIEST.year <= value.year <= LATEST.year",
        INSTANTS,
    ),
    Mutant(
        "a made-up cursor's date goes unbounded",
        "service/engram/services/memories.py",
        "return bounded_instant(datetime.fromisoformat(created)), UUID(memory_id)",
        "return datetime.fromisoformat(created), UUID(memory_id)",
        ("tests/integration/test_boundary.py", "-k", "cursor"),
    ),
    Mutant(
        "a window in year 0 in UTC is kept",
        f"{DOMAIN}/temporal.py",
        "        placed.astimezone(UTC)\n",
        "",
        INSTANTS,
    ),
    Mutant(
        "a day named in year 9999 becomes the occurred_at",
        STORING,
        "occurred = noon if within_bounds(noon) else None",
        "occurred = noon",
        INSTANTS,
    ),
    Mutant(
        "an import's dates go unchecked",
        f"{DOMAIN}/transfer.py",
        "return bounded_instant(value) if isinstance(value, datetime) else value",
        "return value",
        INSTANTS,
    ),
    # What cannot be seen makes no memory and no mention.
    Mutant(
        "a Hangul filler or a variation selector is content",
        f"{DOMAIN}/boundary.py",
        r'    r"\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"',
        r'    r"\ufeff"',
        ("tests/unit/test_text.py",),
    ),
    Mutant(
        "a judge is asked about a text of nothing visible",
        DEDUP,
        "        if not (readable(new) and readable(existing)):",
        "        if False:",
        INVISIBLE,
    ),
    Mutant(
        "the rules relate a text of nothing visible",
        RELATIONS,
        "    if not (readable(new) and readable(existing)):",
        "    if False:",
        INVISIBLE,
    ),
    Mutant(
        "the rules read zero-width characters",
        RELATIONS,
        "verdict = _related(visible(new), visible(existing))",
        "verdict = _related(new, existing)",
        INVISIBLE,
    ),
    Mutant(
        "the lack of words is the same words",
        RELATIONS,
        "if not new.content and normalise(new.text) != normalise(old.text):",
        "if False:",
        INVISIBLE,
    ),
    Mutant(
        "an invisible mem0 memory is imported as content",
        f"{DOMAIN}/transfer.py",
        'isinstance(record.get("memory"), str) or not readable(record["memory"]):',
        'isinstance(record.get("memory"), str) or not record["memory"].strip():',
        ("tests/integration/test_boundary.py", "-k", "mention"),
    ),
    # One outage, one warning when it begins and one line when it ends.
    Mutant(
        "an outage is logged on every failure",
        "service/engram/observability/outages.py",
        "            if self._since is not None:\n                return\n            self._since = time.monotonic()",
        "            self._since = time.monotonic()",
        OUTAGE_UNIT,
    ),
    Mutant(
        "memory uses waiting warn at every flush",
        "service/engram/services/access.py",
        "            self._database.began(exc)",
        '            log.warning("uses of %d memories not written yet", len(uses))',
        DATABASE_OUTAGE,
    ),
    Mutant(
        "a read's flush does not wait for the uses a flush under way has taken",
        "service/engram/services/access.py",
        "            async with self._writing.setdefault(name, asyncio.Lock()):",
        "            if name:",
        ("tests/integration/test_search.py", "-k", "flush_under_way"),
    ),
    Mutant(
        "a new connection does not end the database's outage",
        "service/engram/store/db.py",
        "        connected()\n",
        "",
        DATABASE_OUTAGE,
    ),
    Mutant(
        "each 503 is an outage of its own",
        "service/engram/api/errors.py",
        "database_outage(app).began(exc)",
        'Outage(log, "database", "answering 503").began(exc)',
        DATABASE_OUTAGE,
    ),
    Mutant(
        "an MCP call that meets the outage says nothing",
        "service/engram/mcp/tools.py",
        "                database().began(exc)",
        "                pass",
        OUTAGE_UNIT,
    ),
    Mutant(
        "a scheduled run logs a traceback per tenant in an outage",
        "service/engram/scheduler.py",
        "            if not unreachable(exc):\n                log.exception",
        "            if True:\n                log.exception",
        OUTAGE_UNIT,
    ),
    Mutant(
        "redis warns at every failure",
        "service/engram/cache/redis.py",
        "        self._outage.began(exc)",
        '        log.warning("redis unreachable (%s)", exc)',
        ("tests/integration/test_outages.py", "-k", "thirty and redis"),
    ),
    Mutant(
        "the embedding API warns at every call",
        "service/engram/embedding/api.py",
        "            self._outage.began(exc)",
        '            log.warning("embedding API %s failed: %s", self._model, exc)',
        OUTAGE_UNIT,
    ),
    Mutant(
        "the LLM warns at every call",
        "service/engram/judge/chat.py",
        "            self._outage.began(exc)",
        '            log.warning("LLM call failed (%s)", exc)',
        OUTAGE_UNIT,
    ),
    Mutant(
        "the judge and the rewriter each log the LLM's outage",
        "service/engram/judge/chat.py",
        "self._outage = _outage_of(self.model, self._api_base)",
        'self._outage = Outage(log, "LLM", "the rules stand in")',
        OUTAGE_UNIT,
    ),
    Mutant(
        "a head that comes whole in one read is not capped",
        SERVER,
        "if self._head_size > self.limits.max_head_bytes:  # it came whole, in one read",
        "if False:  # it came whole, in one read",
        CONNECTIONS,
    ),
    Mutant(
        "a head that keeps coming is buffered without end",
        SERVER,
        "if self._reading_head and self._head_bytes > self.limits.max_head_bytes:",
        "if False:",
        CONNECTIONS,
    ),
    Mutant(
        "a client that never completes its head is kept",
        SERVER,
        "if self._reading_head and now > self._head_deadline:",
        "if False:",
        CONNECTIONS,
    ),
    Mutant(
        "a stalled body is waited for without end",
        SERVER,
        "body_stalled = cycle is not None and cycle.more_body and not self.flow.read_paused",
        "body_stalled = False",
        CONNECTIONS,
    ),
    Mutant(
        "one memory's body has a batch's room",
        "service/engram/api/errors.py",
        "        return self.max_request_bytes",
        "        return self.max_body_bytes",
        ADMISSION,
    ),
    Mutant(
        "the body is read before the key is checked",
        "service/engram/api/admission.py",
        'found = _TENANT_API.match(str(scope.get("path", ""))) if scope["type"] == "http" else None',
        "found = None",
        ADMISSION,
    ),
    Mutant(
        "a tenant over its share is never refused",
        "service/engram/services/intake.py",
        "        if wait > MAX_WAIT_SECONDS:",
        "        if False:",
        (*FAIR, *ADMISSION),
    ),
    Mutant(
        "MCP does not draw on the tenant's share",
        "service/engram/mcp/http.py",
        "await self._admit(context.name, declared_length(scope))",
        "pass",
        ADMISSION,
    ),
    Mutant(
        "bulk work never rests for others",
        "service/engram/services/slices.py",
        "await asyncio.sleep(self._rest if ACTIVITY.others_waiting() else 0)",
        "await asyncio.sleep(0)",
        FAIR,
    ),
    Mutant(
        "one owner's chunks go all ahead of the others'",
        "service/engram/embedding/base.py",
        "            async with self._turns.turn(owner):",
        "            async with contextlib.nullcontext():",
        FAIR,
    ),
    Mutant(
        "an unknown tenant answers differently from a wrong key",
        TENANTS_SERVICE,
        'raise Unauthorized("invalid API key") from None',
        "raise",
        ADMISSION,
    ),
    Mutant(
        "the metrics key is not asked for",
        "service/engram/api/routes/observability.py",
        "    if wanted is not None:",
        "    if False:",
        ADMISSION,
    ),
    Mutant(
        "a second vector made from an older text is stored",
        RETRIEVAL_STORE,
        "AND m.content = d.content AND m.retrieval_embedding IS NULL",
        "AND m.retrieval_embedding IS NULL",
        CHANNEL,
    ),
    Mutant(
        "a new content keeps the old second vector",
        CHANNEL_MIGRATION,
        "        NEW.retrieval_embedding := NULL;",
        "        NULL;",
        CHANNEL,
    ),
    Mutant(
        "the second vectors' sums forget what is deleted",
        CHANNEL_MIGRATION,
        "    UPDATE {{schema}}.retrieval_sums s SET total = s.total - o.total, count = s.count - o.count",
        "    UPDATE {{schema}}.retrieval_sums s SET total = s.total, count = s.count",
        CHANNEL,
    ),
    Mutant(
        "a tenant that turned the channel off still gets second vectors",
        RETRIEVAL_SERVICE,
        "        if not ctx.retrieval:\n            return 0",
        "        if False:\n            return 0",
        CHANNEL,
    ),
    Mutant(
        "two processes work the same batch",
        RETRIEVAL_SERVICE,
        "                    break  # another process is working this tenant's queue",
        "                    pass",
        CHANNEL,
    ),
    Mutant(
        "the second channel's evidence is not fused",
        FUSION,
        "        missed *= 1.0 - self.retrieval * clip(c.retrieval)\n",
        "",
        CHANNEL,
    ),
    Mutant(
        "a memory with only second-vector evidence counts as context-only",
        FUSION,
        "    own = c.vector > 0 or c.retrieval > 0 or c.keyword > 0",
        "    own = c.vector > 0 or c.keyword > 0",
        ("tests/unit/test_fusion.py",),
    ),
    Mutant(
        "e5's means shrink towards zero: every memory of a small tenant is evidence",
        "service/engram/domain/centring.py",
        "        lang: ((total + SHRINK * prior.get(lang, zero)) / (count + SHRINK)).astype(np.float32)",
        "        lang: (total / (count + SHRINK)).astype(np.float32)",
        ("tests/integration/test_mcp.py", "-k", "streamable_http_round_trip"),
    ),
    Mutant(
        "a long memory's keyword evidence is not discounted",
        "service/engram/store/memories.py",
        'length = f"least(1.0, power({LENGTH_PIVOT}.0 / greatest(length(m.search_tokens), 1), {exponent}::float8))"',
        'length = f"(1.0 + 0 * {exponent}::float8)"',
        ("tests/integration/test_search.py", "-k", "long"),
    ),
    Mutant(
        "a query asks for a code as typed, not its canonical form",
        f"{DOMAIN}/identifiers.py",
        '            found.append(token.replace("-", ""))',
        "            found.append(token)",
        IDENTIFIERS,
    ),
    Mutant(
        "a spaced code is not joined",
        f"{DOMAIN}/identifiers.py",
        "        found.append(letters + digits)",
        "        continue",
        IDENTIFIERS,
    ),
    Mutant(
        "a memory's own named time is not read from when it was said",
        "service/engram/services/search.py",
        "    return told is not None and told.start < window.end and window.start < told.end",
        "    return False",
        ("tests/integration/test_mention_time.py",),
    ),
    Mutant(
        "a memory told soon after a window is treated as of another time",
        FUSION,
        "        return _scored(h, weights, time=after if h.id in told_after else factor)",
        "        return _scored(h, weights, time=factor)",
        ("tests/integration/test_mention_time.py",),
    ),
]


def run(mutant: Mutant) -> str:
    path = ROOT / mutant.path
    original = path.read_text()
    if original.count(mutant.before) != 1:
        return "MISSING (the code changed: update tests/mutants.py)"
    path.write_text(original.replace(mutant.before, mutant.after))
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mutant.tests],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
    finally:
        path.write_text(original)
    return "killed" if result.returncode != 0 else "SURVIVED"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run the mutants whose description holds this")
    chosen = [m for m in MUTANTS if parser.parse_args().only in m.what]
    outcomes = {}
    for mutant in chosen:
        outcomes[mutant.what] = run(mutant)
        print(f"{outcomes[mutant.what]:>9}  {mutant.what}", flush=True)
    survivors = [what for what, outcome in outcomes.items() if outcome != "killed"]
    print(f"\n{len(chosen) - len(survivors)} of {len(chosen)} killed")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
