"""The whole REST API fuzzed against the OpenAPI it publishes (schemathesis, bounded).

Every operation gets about 30 generated requests, valid and invalid, besides schemathesis'
coverage cases (boundaries, missing and wrong-typed values, undeclared methods); then a stateful
run chains the operations through the links schemathesis infers (write a memory, then read,
patch, forget, restore, purge it...). Everything goes to the real service under uvicorn with a
real tenant's key. It proves that no request, however malformed, gets a 5xx, and that every
answer is the one documented: its status code, its content type, its headers and its body's
schema (the error model included). Every other built-in check is on too (invalid input refused,
valid input accepted, auth enforced, 405 with Allow for an undeclared method, a deleted memory
gone), with the three exceptions below said where they are made. Deterministic (derandomized, no
example database, each stateful scenario from an empty tenant); about a minute on two cores.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import hypothesis
import pytest
import schemathesis
from schemathesis.core.failures import AcceptedNegativeData, Failure
from schemathesis.generation import overrides
from schemathesis.generation.stateful.state_machine import APIStateMachine
from schemathesis.openapi.checks import RejectedPositiveData

from engram.api.app import create_app
from engram.domain.tenancy import hash_key, new_key
from engram.runtime import Engram
from engram.settings import Settings
from engram.store import tenant_meta
from tests.conftest import ServerThread, unique_tenant

EXAMPLES_PER_OPERATION = 30
STATEFUL_SCENARIOS = 30
STATEFUL_STEPS = 10
# Made now: schemathesis builds its coverage cases, credentials included, when pytest collects.
# The fixture creates the tenant and registers the key as one of its keys.
TENANT = unique_tenant("fuzz")
KEY = new_key(TENANT)
CONFIG = schemathesis.Config.from_dict(
    {
        "seed": 20260617,
        # Requests reach a real database and embedder: slow examples are expected, not a problem.
        "suppress-health-check": ["too_slow"],
        "parameters": {"tenant": TENANT},
        "request-timeout": 60,
        "generation": {"max-examples": EXAMPLES_PER_OPERATION, "deterministic": True, "database": "none"},
        "phases": {"stateful": {"max-steps": STATEFUL_STEPS}},
        "operations": [
            {
                # A memory's history outlives its purge by design (README): the purge is its last
                # event, the content erased. Its other routes answer 404 after a purge, as checked.
                "include-name": "GET /t/{tenant}/v1/memories/{memory_id}/history",
                "checks": {"use_after_free": {"enabled": False}},
            },
            {
                # An import file is valid by what its lines mean (an export's header first and its
                # closing line last, a mem0 record's text), which its JSON Schema cannot state: a
                # schema-valid body may be refused. Everything else is checked, 5xx included.
                "include-name": "POST /t/{tenant}/v1/import",
                "checks": {"positive_data_acceptance": {"enabled": False}},
            },
        ],
    }
)


def published_openapi() -> dict[str, Any]:
    """What the app serves at /openapi.json (building it needs no database); a test below checks
    that the running service serves exactly this."""
    placeholder = "postgresql://fuzz@127.0.0.1:1/fuzz"
    return create_app(Settings(database_url=placeholder, state_dir=Path("/nonexistent")), placeholder).openapi()


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx: Any, value: Any) -> bytes:
    """An import body: the generated objects one per line (anything else as one line of JSON)."""
    items = value if isinstance(value, list) else [value]
    return "".join(json.dumps(item) + "\n" for item in items).encode()


# Loaded when the module is: schemathesis' lazy pytest loader (from_fixture) does not run on pytest 9.
schema = schemathesis.openapi.from_dict(published_openapi(), config=CONFIG)


@schema.auth()
class TenantKey:
    """The tenant's real key (schemathesis leaves it out, or spoils it, where it tests auth)."""

    def get(self, case: schemathesis.Case, context: schemathesis.AuthContext) -> str:
        return KEY

    def set(self, case: schemathesis.Case, data: str, context: schemathesis.AuthContext) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


def refused_by_design(case: schemathesis.Case, response: schemathesis.Response) -> bool:
    """The refusals that the schema documents in words only, since a JSON Schema cannot say them
    (or the generator would not follow it): a list cursor is an opaque token of the server's (only
    a next_cursor it issued is valid), metadata is free-form JSON in which no text, however deep,
    may hold a NUL (a schema would need a recursive type for that; every text field has it as a
    pattern), and an erasure names a filter or a query (top_k only with a query)."""
    if response.status_code != 422:
        return False
    error = response.json()["error"]
    made_up_cursor = "cursor" in (case.query or {}) and error.get("field") == "cursor"
    # an erasure must say what it erases (a filter or a query; top_k counts a query's hits)
    vague_erasure = case.path.endswith("/erase") and error.get("field") in ("filter", "top_k")
    nul_in_metadata = re.fullmatch(r"(items\[\d+\]\.)?metadata", error.get("field", "")) is not None and (
        "contains a NUL character" in error["message"]
    )
    return made_up_cursor or nul_in_metadata or vague_erasure


@schema.hook
def filter_failure(
    context: schemathesis.HookContext, failure: Failure, case: schemathesis.Case, response: schemathesis.Response
) -> bool:
    """Lets through only "valid data refused" for a refusal by design; any other failure of the
    same request, and every other check, still fails the test."""
    if isinstance(failure, AcceptedNegativeData) and untyped_on_the_wire(case, failure):
        return False
    return not (isinstance(failure, RejectedPositiveData) and refused_by_design(case, response))


def untyped_on_the_wire(case: schemathesis.Case, failure: AcceptedNegativeData) -> bool:
    """A query string carries text only: a "negative" value of another type (``tag=False``, or one
    text where the schema says a list of texts) arrives as text a text parameter rightly takes.
    A text that breaks a pattern or a length is reported by those keywords, and still fails."""
    found = re.search(r"parameter `(\w+)` in query - violates `(anyOf|type)` at /properties/(\w+)$", failure.message)
    if found is None or found.group(1) != found.group(3):
        return False
    value = (case.query or {}).get(found.group(1))
    values = value if isinstance(value, list) else [value]
    return bool(values)


@pytest.fixture(scope="module")
async def fuzzed_tenant(engram: Engram) -> str:
    ctx, _ = await engram.tenants.create(TENANT)
    async with engram.pool.acquire() as conn:
        await tenant_meta.add_key(conn, ctx.schema, hash_key(KEY))
    return TENANT


def test_the_fuzzed_schema_is_the_one_served(service: ServerThread) -> None:
    assert httpx.get(f"{service.url}/openapi.json").json() == schema.raw_schema


@schema.parametrize()
def test_every_operation_answers_as_documented(
    case: schemathesis.Case, service: ServerThread, fuzzed_tenant: str
) -> None:
    case.call_and_validate(base_url=service.url)


def empty_tenant(base_url: str) -> None:
    """Forget and purge every memory of the tenant, through the API."""
    statuses = ["active", "superseded", "forgotten"]
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=f"{base_url}/t/{TENANT}/v1", headers=headers, timeout=60) as client:
        while items := client.get("/memories", params={"status": statuses, "limit": 500}).json()["items"]:
            for memory in items:
                assert client.post(f"/memories/{memory['id']}/forget").status_code == 200
                assert client.delete(f"/memories/{memory['id']}").status_code == 204


def test_chained_operations_answer_as_documented(service: ServerThread, fuzzed_tenant: str) -> None:
    class Machine(schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            # Each scenario starts from the same (empty) tenant, so the same steps get the same
            # answers: Hypothesis needs that to replay a scenario (and to shrink a failing one).
            empty_tenant(service.url)

        def before_call(self, case: schemathesis.Case) -> None:
            # The configured {tenant}, as schemathesis' own runner applies it to a stateful step.
            overrides.for_operation(schema.config, operation=case.operation).apply_to(case)

        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {"base_url": service.url}

    machine: type[APIStateMachine] = Machine
    settings = hypothesis.settings(
        schema.config.get_hypothesis_settings(phase="stateful"),
        max_examples=STATEFUL_SCENARIOS,
        stateful_step_count=STATEFUL_STEPS,
    )
    machine.run(settings=settings)
