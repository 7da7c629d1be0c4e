"""The memory browser in headless Chromium against the real service and database: log in, find
what the API wrote, see why search found it, edit, forget, restore, purge, read the history; a
wrong key sees nothing. A screenshot of each main page goes to test-artifacts/ui/."""

import httpx
import pytest
from playwright.async_api import expect

from tests.conftest import ServerThread, unique_tenant
from tests.ui.conftest import screenshot


@pytest.fixture
async def ui_tenant(engram):
    name = unique_tenant("ui")
    _, key = await engram.tenants.create(name)
    return name, key


@pytest.fixture
def service(settings, bootstrapped, ui_tenant):
    """The service for this test's tenant alone (other tests' tenants may hold vectors of another
    model), with a forgetting threshold high enough that fresh memories are candidates."""
    lifecycle = settings.lifecycle.model_copy(update={"forget_threshold": 0.9, "scheduler_enabled": False})
    configured = settings.model_copy(update={"lifecycle": lifecycle, "tenant": ui_tenant[0]})
    with ServerThread(configured, bootstrapped) as running:
        yield running


def rest(service, name: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=f"{service.url}/t/{name}/v1", headers={"Authorization": f"Bearer {key}"})


async def log_in(page, service, name: str, key: str) -> None:
    await page.goto(f"{service.url}/t/{name}/ui")
    await page.fill("#key", key)
    await page.click("#login-form button")


async def test_a_wrong_key_sees_nothing(page, service, ui_tenant, engram):
    name, key = ui_tenant
    with rest(service, name, key) as api:
        api.post("/memories", json={"content": "The user's PIN hint is a secret"}).raise_for_status()
    await log_in(page, service, name, "ek.nobody.wrong")
    await expect(page.locator("#login-error")).to_have_text("That key does not open this tenant.")
    await expect(page.locator("#memories-view")).to_be_hidden()
    assert "secret" not in await page.content()
    assert "ek.nobody.wrong" not in page.url


async def test_browse_search_explain_edit_forget_restore_purge(page, service, ui_tenant):
    name, key = ui_tenant
    with rest(service, name, key) as api:
        chinese = api.post("/memories", json={"content": "用户偏好顺丰快递", "type": "preference"}).json()["memory"]
        api.post("/memories", json={"content": "The user's flight CA981 leaves at 9am", "type": "event"})
        api.post("/memories", json={"content": "The user likes coffee", "type": "preference"})
        changed = api.post("/memories", json={"content": "The user switched from coffee to tea", "type": "preference"})
        tea = changed.json()["memory"]

    await log_in(page, service, name, key)
    table = page.locator("#memory-table tbody")
    await expect(table.locator("tr")).to_have_count(3)  # the coffee memory was superseded by the tea one
    await expect(table).to_contain_text("用户偏好顺丰快递")
    await expect(page.locator("#counts")).to_contain_text("preference 2")
    assert key not in page.url
    await screenshot(page, "memories")

    await page.click("#nav a[data-view=search]")
    await page.fill("#search-form input[name=query]", "顺丰")
    await page.click("#search-form button")
    await expect(page.locator("#hits .hit").first).to_contain_text("用户偏好顺丰快递")
    await expect(page.locator("[data-channel=keyword] li").first).to_contain_text("用户偏好顺丰快递")
    await expect(page.locator("[data-channel=vector] li")).not_to_have_count(0)
    await expect(page.locator("#fused tbody tr").first).to_contain_text("用户偏好顺丰快递")
    await screenshot(page, "search-explain")

    await page.click("#nav a[data-view=memories]")
    await table.locator(f"tr[data-id='{chinese['id']}']").click()
    await page.fill("#edit-content", "用户偏好顺丰快递，不要中通")
    await page.click("#save")
    await expect(table).to_contain_text("用户偏好顺丰快递，不要中通")
    await expect(page.locator("#history li[data-event=updated]")).to_have_count(1)
    await page.click("#forget")
    await expect(page.locator("#restore")).to_be_visible()
    await expect(table.locator(f"tr[data-id='{chinese['id']}']")).to_have_count(0)  # the list shows active ones
    await page.click("#restore")
    await expect(page.locator("#forget")).to_be_visible()
    await expect(page.locator("#detail")).not_to_contain_text("null")
    events = await page.locator("#history li").evaluate_all("items => items.map(i => i.dataset.event)")
    assert events[:1] == ["written"] and {"updated", "forgotten", "restored"} <= set(events)
    await screenshot(page, "memory-history")

    await table.locator(f"tr[data-id='{tea['id']}']").click()
    await expect(page.locator("#versions li")).to_have_count(2)
    await expect(page.locator("#versions li").first).to_contain_text("The user likes coffee")

    await table.locator(f"tr[data-id='{chinese['id']}']").click()
    await page.click("#forget")
    await page.click("#purge")
    await expect(page.locator("#detail")).to_be_hidden()
    with rest(service, name, key) as api:
        assert api.get(f"/memories/{chinese['id']}").status_code == 404

    await page.click("#nav a[data-view=forgetting]")
    await page.click("#preview")
    candidates = page.locator("#forgetting-table tbody tr")
    await expect(candidates.first).to_be_visible()
    await expect(page.locator("#forgetting-table")).to_contain_text("The user's flight CA981 leaves at 9am")
    await expect(page.locator("#forgetting-table")).to_contain_text("below 0.9")
    await screenshot(page, "forgetting")

    await page.click("#logout")
    await expect(page.locator("#login-view")).to_be_visible()
    await page.reload()
    await expect(page.locator("#login-view")).to_be_visible()  # the key left with the session


async def test_paging_and_filters(page, service, ui_tenant):
    name, key = ui_tenant
    items = [{"content": f"Reading note {i}: chapter {i} of the novel", "type": "fact"} for i in range(55)]
    items.append({"content": "Call the dentist on Monday", "type": "task", "tags": ["health"]})
    with rest(service, name, key) as api:
        api.post("/memories/batch", json={"items": items}).raise_for_status()
    await log_in(page, service, name, key)
    rows = page.locator("#memory-table tbody tr")
    await expect(rows).to_have_count(50)
    await page.click("#more")
    await expect(rows).to_have_count(56)
    await expect(page.locator("#more")).to_be_hidden()
    await page.select_option("#filters select[name=type]", "task")
    await page.click("#filters button")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text("Call the dentist on Monday")
    await page.select_option("#filters select[name=type]", "")
    await page.fill("#filters input[name=tag]", "nothing-has-this-tag")
    await page.click("#filters button")
    await expect(page.locator("#empty")).to_be_visible()
