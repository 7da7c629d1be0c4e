"""What a request meets before its body is read: one memory, a search or a turn is capped far
below a batch (413); the key is checked first (a body of garbage without a valid key is a 401,
not a parse); a batch over the most a batch may hold is refused before its items are read; and a
tenant over its share of the intake waits, then is told to come back (429), over REST and MCP,
while another tenant is served at once."""

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import SecretStr

from engram.domain.models import MAX_BATCH_CEILING
from tests.conftest import ServerThread, tenant_api, unique_tenant

pytestmark = pytest.mark.usefixtures("service")


async def test_a_single_request_is_capped_below_a_batch(service, tenant, settings):
    ctx, key = tenant
    over = settings.max_request_bytes + 1
    async with tenant_api(service, ctx.name, key) as client:
        one = await client.post("/memories", json={"content": "x" * over})
        assert one.status_code == 413 and one.json()["error"]["code"] == "too_large"
        search = await client.post("/search", json={"query": "y" * over})
        assert search.status_code == 413
        items = [{"content": f"The user's parcel {i} is late " + "z" * 2000} for i in range(300)]  # ~600 KB
        batch = await client.post("/memories/batch", json={"items": items})
        assert batch.status_code == 200, batch.text  # a batch has a batch's room


async def test_the_key_is_checked_before_the_body_is_read(service, tenant):
    ctx, _ = tenant
    async with httpx.AsyncClient(base_url=f"{service.url}/t/{ctx.name}/v1") as anonymous:
        for key in (None, f"ek.{ctx.name}.not-a-key", "garbage"):
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            refused = await anonymous.post("/memories", content=b"{not json", headers=headers)
            assert refused.status_code == 401, refused.text  # not 422: the body was never parsed
        unknown = await anonymous.post("/memories", content=b"{", headers={"Authorization": "Bearer ek.nobody.x"})
        assert unknown.status_code == 401  # an unknown tenant looks like a bad key


async def test_a_batch_over_the_ceiling_is_refused_naming_the_field(service, tenant):
    ctx, key = tenant
    async with tenant_api(service, ctx.name, key) as client:
        items = [{"content": f"The user's parcel {i} is late"} for i in range(MAX_BATCH_CEILING + 1)]
        refused = await client.post("/memories/batch", json={"items": items})
        assert refused.status_code == 422 and refused.json()["error"]["field"] == "items", refused.text
        assert (await client.get("/memories")).json()["items"] == []


@pytest.fixture(scope="module")
def narrow(settings, bootstrapped):
    """A service whose tenants may send 2 KB a second, after a burst of 64 KB."""
    limits = {"tenant_intake_bytes_per_second": 2048, "max_body_bytes": 64 * 1024, "max_request_bytes": 64 * 1024}
    with ServerThread(settings.model_copy(update=limits), bootstrapped) as running:
        yield running


async def test_a_tenant_over_its_share_waits_then_is_refused_and_others_are_served(narrow, engram):
    flooder, flooder_key = await engram.tenants.create(unique_tenant("flood"))
    other, other_key = await engram.tenants.create(unique_tenant("calm"))
    body = {"query": "what does the user drink " + "w" * 60_000}  # ~60 KB: most of the burst
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {flooder_key}"})
    async with Client(streamable_http_client(f"{narrow.url}/t/{flooder.name}/mcp", http_client=http)) as mcp:
        assert (await mcp.list_tools()).tools  # within its share: served
    async with tenant_api(narrow, flooder.name, flooder_key) as client:
        # admitted (and charged) before it is read, then refused for its over-long query
        assert (await client.post("/search", json=body)).status_code == 422
        refused = await client.post("/search", json=body)  # half a minute of its share to wait: no
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limited"
        assert int(refused.headers["Retry-After"]) >= 5
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "p" * 20_000}}
        over_mcp = await client.post(
            f"{narrow.url}/t/{flooder.name}/mcp",
            json=call,
            headers={"Accept": "application/json, text/event-stream"},
        )
        assert over_mcp.status_code == 429, over_mcp.text  # MCP draws on the same share
    async with tenant_api(narrow, other.name, other_key) as calm:
        assert (await calm.post("/search", json={"query": "tea"})).status_code == 200


async def test_a_tenant_name_cannot_be_learned_from_the_answers(service, tenant):
    ctx, _ = tenant
    answers = []
    async with httpx.AsyncClient(base_url=service.url) as anonymous:
        for name in (ctx.name, unique_tenant("absent")):
            guess = {"Authorization": f"Bearer ek.{name}.guessed"}
            for headers in ({}, guess):
                response = await anonymous.get(f"/t/{name}/v1/memories", headers=headers)
                answers.append((response.status_code, response.json()["error"]["message"]))
    assert answers[:2] == answers[2:], answers  # the same for a tenant that exists and one that does not
    assert {status for status, _ in answers} == {401}


@pytest.fixture(scope="module")
def keyed_metrics(settings, bootstrapped):
    with ServerThread(settings.model_copy(update={"metrics_key": SecretStr("m" * 40)}), bootstrapped) as running:
        yield running


def test_metrics_with_a_key_are_served_with_it_only(keyed_metrics, service):
    assert httpx.get(f"{keyed_metrics.url}/metrics").status_code == 401
    assert httpx.get(f"{keyed_metrics.url}/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
    served = httpx.get(f"{keyed_metrics.url}/metrics", headers={"Authorization": "Bearer " + "m" * 40})
    assert served.status_code == 200 and "engram_" in served.text
    assert httpx.get(f"{service.url}/metrics").status_code == 200  # without a key set: open, as documented
