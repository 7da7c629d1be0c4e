"""The memory browser in headless Chromium against the real service and database, at desktop and
phone width: log in, find what the API wrote (text filter, timeline, filters), see why search found
it, edit, pin, forget, restore, purge one or many, read the history and the chain of versions,
preview forgetting on its decay chart and run it; pick an end user (by the start of their id, a
page at a time) to list and search theirs with or without the shared ones; errors read as
sentences; a wrong key sees nothing. Screenshots of the main pages go to test-artifacts/ui/ (docs/ui/ keeps a copy)."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.async_api import expect

from tests.conftest import ServerThread, unique_tenant
from tests.ui.conftest import screenshot

BOTH = pytest.mark.parametrize("page", ["desktop", "phone"], indirect=True)


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


async def fits_the_screen(page) -> None:
    """Nothing sticks out sideways: the page scrolls only up and down."""
    overflow = await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than the screen"


@BOTH
async def test_a_wrong_key_sees_nothing(page, service, ui_tenant, engram):
    name, key = ui_tenant
    with rest(service, name, key) as api:
        api.post("/memories", json={"content": "The user's PIN hint is a secret"}).raise_for_status()
    await page.goto(f"{service.url}/t/{name}/ui")
    await expect(page.locator("#nav")).to_be_hidden()  # nothing to navigate before logging in
    await log_in(page, service, name, "ek.nobody.wrong")
    await expect(page.locator("#login-error")).to_have_text("That key does not open this tenant.")
    await expect(page.locator("#memories-view")).to_be_hidden()
    await expect(page.locator("#nav")).to_be_hidden()
    assert "secret" not in await page.content()
    assert "ek.nobody.wrong" not in page.url
    await fits_the_screen(page)
    await screenshot(page, f"login-{page.viewport_size['width']}")


@BOTH
async def test_browse_search_explain_edit_forget_restore_purge(page, service, ui_tenant):
    phone = page.viewport_size["width"] < 500
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
    await expect(page.locator("#counts [data-type=preference] strong")).to_have_text("2")
    await expect(page.locator("#counts [data-type=task] strong")).to_have_text("0")
    await expect(page.locator("#counts")).to_contain_text("Layers: long term 3")  # "task 0" once, as a type
    # The second vectors of the four memories: waiting, or made by the service's worker already.
    await expect(page.locator("#retrieval-lag")).to_contain_text(re.compile(r"second vectors: (up to date|\d+ memor)"))
    await expect(page.locator("#timeline .timeline-bar")).to_have_count(1)
    assert key not in page.url
    await fits_the_screen(page)
    await screenshot(page, f"memories-{page.viewport_size['width']}")

    await page.click("#nav a[data-view=search]")
    await page.fill("#search-form input[name=query]", "顺丰")
    await page.click("#search-form button")
    await expect(page.locator("#hits .hit").first).to_contain_text("用户偏好顺丰快递")
    await expect(page.locator("[data-channel=keyword] li").first).to_contain_text("用户偏好顺丰快递")
    await expect(page.locator("[data-channel=vector] li")).not_to_have_count(0)
    await expect(page.locator("#fused tbody tr").first).to_contain_text("用户偏好顺丰快递")
    # Every channel's evidence, the second vector's too, in sight at either width (none scrolled off).
    width = page.viewport_size["width"]
    for channel in ("vector", "retrieval", "keyword", "rule", "context"):
        cell = page.locator(f"#fused tbody tr >> nth=0 >> td[data-label={channel}]")
        await expect(cell).to_be_visible()
        box = await cell.bounding_box()
        assert box is not None and box["x"] + box["width"] <= width, (channel, box, width)
    await fits_the_screen(page)
    await screenshot(page, f"search-explain-{page.viewport_size['width']}")

    await page.click("#nav a[data-view=memories]")
    await table.locator(f"tr[data-id='{chinese['id']}'] td.content").click()
    if phone:  # the memory opens as a sheet over the list, and closes back to it
        await expect(page.locator("#detail")).to_be_visible()
        box = await page.locator("#detail").bounding_box()
        assert box is not None and box["width"] >= 399 and box["x"] == 0
        await page.click("#close-detail")
        await expect(page.locator("#detail")).to_be_hidden()
        await table.locator(f"tr[data-id='{chinese['id']}'] td.content").click()
    await page.fill("#edit-content", "用户偏好顺丰快递，不要中通")
    await page.click("#save")
    await expect(table).to_contain_text("用户偏好顺丰快递，不要中通")
    await expect(page.locator("#history li[data-event=updated]")).to_have_count(1)
    await page.click("#pin")
    await expect(page.locator("#detail .badge.pinned")).to_be_visible()
    await expect(table.locator(f"tr[data-id='{chinese['id']}'] .badge.pinned")).to_be_visible()
    await page.click("#forget")
    await expect(page.locator("#restore")).to_be_visible()
    await expect(table.locator(f"tr[data-id='{chinese['id']}']")).to_have_count(0)  # the list shows active ones
    await page.click("#restore")
    await expect(page.locator("#forget")).to_be_visible()
    await expect(page.locator("#detail")).not_to_contain_text("null")
    events = await page.locator("#history li").evaluate_all("items => items.map(i => i.dataset.event)")
    assert events[:1] == ["written"] and {"updated", "forgotten", "restored"} <= set(events)
    await screenshot(page, f"memory-history-{page.viewport_size['width']}")

    if phone:
        await page.click("#close-detail")
    await table.locator(f"tr[data-id='{tea['id']}'] td.content").click()
    chain = page.locator("#versions li")
    await expect(chain).to_have_count(2)
    await expect(chain.first).to_contain_text("The user likes coffee")
    await expect(chain.nth(1)).to_have_class("link status-active current")
    # Drawn as a chain: the second card carries the connector from the first.
    connector = await chain.nth(1).evaluate("li => getComputedStyle(li, '::before').borderLeftStyle")
    assert connector == "solid"
    await screenshot(page, f"versions-chain-{page.viewport_size['width']}")
    await chain.first.locator("button").click()  # the older version opens in its place
    await expect(page.locator("#detail textarea")).to_have_value("The user likes coffee")

    if phone:
        await page.click("#close-detail")
    await table.locator(f"tr[data-id='{chinese['id']}'] td.content").click()
    await page.click("#forget")
    await page.click("#purge")
    await expect(page.locator("#detail")).to_be_hidden()
    with rest(service, name, key) as api:
        assert api.get(f"/memories/{chinese['id']}").status_code == 404

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
    await page.click("#counts [data-type=task]")  # a count is a shortcut to its filter
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text("Call the dentist on Monday")
    await page.click("#filters summary")
    await page.select_option("#filters select[name=type]", "")
    await page.fill("#filters input[name=tag]", "nothing-has-this-tag")
    await page.click("#filters button[type=submit]")
    await expect(page.locator("#empty")).to_be_visible()


@BOTH
async def test_text_filter_and_timeline(page, service, ui_tenant):
    name, key = ui_tenant
    items = [
        {"content": "用户在三月搬家到了杭州", "type": "event", "occurred_at": "2026-03-14T10:00:00Z"},
        {"content": "Moved the piano to the new flat", "type": "event", "occurred_at": "2026-03-20T10:00:00Z"},
        {"content": "The user started learning the PIANO", "type": "event", "occurred_at": "2026-06-02T10:00:00Z"},
        {"content": "The user runs on Sundays", "type": "preference", "occurred_at": "2026-06-05T10:00:00Z"},
        {"content": "Book the dentist", "type": "task", "occurred_at": "2026-09-09T10:00:00Z"},
    ]
    with rest(service, name, key) as api:
        api.post("/memories/batch", json={"items": items}).raise_for_status()
    await log_in(page, service, name, key)
    rows = page.locator("#memory-table tbody tr")
    await expect(rows).to_have_count(5)

    await page.fill("#filters input[name=contains]", "piano")  # any case, applied as you type
    await expect(rows).to_have_count(2)
    await page.fill("#filters input[name=contains]", "杭州")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text("用户在三月搬家到了杭州")
    await page.fill("#filters input[name=contains]", "")
    await expect(rows).to_have_count(5)

    bars = page.locator("#timeline .timeline-bar")  # six months apart: one bar a week holding memories
    await expect(bars).to_have_count(4)
    await expect(page.locator("#timeline-caption")).to_contain_text("5 memories by week")
    await bars.first.click()  # the week of 14 March 2026 (a Saturday): the week starts on Monday the 9th
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text("杭州")
    await expect(page.locator("#timeline-clear")).to_contain_text("Mar 9, 2026")
    await expect(bars.first).to_have_class("timeline-bar picked")
    await fits_the_screen(page)
    await screenshot(page, f"timeline-{page.viewport_size['width']}")
    await page.click("#timeline-clear")
    await expect(rows).to_have_count(5)
    await page.fill("#filters input[name=contains]", "the")  # the timeline follows the filters
    await expect(bars).to_have_count(4)
    await page.fill("#filters input[name=contains]", "piano")
    await expect(bars).to_have_count(2)


@BOTH
async def test_bulk_forget_restore_and_pin(page, service, ui_tenant):
    name, key = ui_tenant
    items = [{"content": f"Errand {i}: pick up parcel {i}", "type": "task"} for i in range(4)]
    with rest(service, name, key) as api:
        written = api.post("/memories/batch", json={"items": items}).json()["results"]
    ids = [r["memory"]["id"] for r in written]
    await log_in(page, service, name, key)
    rows = page.locator("#memory-table tbody tr")
    await expect(rows).to_have_count(4)
    for memory_id in ids[:2]:
        await page.check(f"#memory-table tr[data-id='{memory_id}'] .pick-one")
    await expect(page.locator("#bulk-count")).to_have_text("2 memories selected")
    await fits_the_screen(page)
    await screenshot(page, f"bulk-{page.viewport_size['width']}")
    await page.click("#bulk-forget")
    await expect(page.locator("#notice")).to_contain_text("Forgot 2 memories.")
    await expect(rows).to_have_count(2)
    await expect(page.locator("#bulk")).to_be_hidden()

    await page.click("#counts [data-status=forgotten]")
    await expect(rows).to_have_count(2)
    await page.check("#select-all")
    await expect(page.locator("#bulk-count")).to_have_text("2 memories selected")
    await page.click("#bulk-restore")
    await expect(page.locator("#notice")).to_contain_text("Restored 2 memories.")
    await expect(page.locator("#empty")).to_be_visible()

    await page.click("#counts [data-status=active]")
    await expect(rows).to_have_count(4)
    await page.check("#select-all")
    await page.click("#bulk-pin")
    await expect(page.locator("#notice")).to_contain_text("Pinned 4 memories.")
    await expect(page.locator("#memory-table .badge.pinned")).to_have_count(4)
    with rest(service, name, key) as api:
        states = [api.get(f"/memories/{i}").json() for i in ids]
        history = api.get(f"/memories/{ids[0]}/history").json()
    assert all(m["status"] == "active" and m["pinned"] for m in states)
    assert [e["event"] for e in history][:3] == ["written", "forgotten", "restored"]


async def test_errors_read_as_sentences(page, service, ui_tenant):
    name, key = ui_tenant
    with rest(service, name, key) as api:
        memory = api.post("/memories", json={"content": "The user's locker is 42"}).json()["memory"]
    await log_in(page, service, name, key)
    await page.locator(f"#memory-table tr[data-id='{memory['id']}'] td.content").click()
    await page.fill("#edit-importance", "7")
    await page.click("#save")
    notice = page.locator("#notice")
    await expect(notice).to_be_visible()
    await expect(notice).to_contain_text("importance")
    await expect(notice).not_to_contain_text("[object Object]")
    await expect(page.locator("#edit-importance")).to_have_attribute("aria-invalid", "true")
    await page.fill("#edit-content", "   ")
    await page.fill("#edit-importance", "0.5")
    await page.click("#save")
    await expect(notice).to_contain_text("content")
    await expect(page.locator("#edit-content")).to_have_attribute("aria-invalid", "true")
    with rest(service, name, key) as api:
        assert api.get(f"/memories/{memory['id']}").json()["content"] == "The user's locker is 42"
    await page.click("#notice-close")
    await expect(notice).to_be_hidden()


@BOTH
async def test_forgetting_preview_chart_and_run(page, service, ui_tenant):
    name, key = ui_tenant
    with rest(service, name, key) as api:
        flight = api.post("/memories", json={"content": "The user's flight CA981 leaves at 9am", "type": "event"})
        api.post("/memories", json={"content": "The user is allergic to peanuts", "type": "fact"})
        pinned = {"content": "Renew the passport", "type": "task", "pinned": True}
        api.post("/memories", json=pinned).raise_for_status()
    flight_id = flight.json()["memory"]["id"]
    await log_in(page, service, name, key)
    await page.click("#nav a[data-view=forgetting]")
    await expect(page.locator("#run-forgetting")).to_be_hidden()  # only once there is a preview to act on
    await page.click("#preview")
    table = page.locator("#forgetting-table")
    await expect(table).to_contain_text("The user's flight CA981 leaves at 9am")
    await expect(table).to_contain_text("below 0.9")
    await expect(table.locator(".verdict").first).to_have_text("forget")
    dots = page.locator("#decay-chart circle.dot")
    await expect(dots).to_have_count(3)  # every memory weighed: the candidate, the current fact, the pinned one
    await expect(page.locator("#decay-chart circle.dot.forget")).to_have_count(1)
    await expect(page.locator("#decay-chart .threshold-label")).to_have_text("threshold 0.9")
    await expect(page.locator("#forgetting-summary")).to_contain_text("stay: pinned")
    await page.locator(f"#decay-chart circle[data-id='{flight_id}']").click()  # a dot points at its row
    await expect(table.locator(f"tr[data-id='{flight_id}']")).to_have_class("goes selected")
    await fits_the_screen(page)
    await screenshot(page, f"forgetting-{page.viewport_size['width']}")

    await page.click("#run-forgetting")
    await expect(page.locator("#notice")).to_contain_text("Forgot 1 memory")
    await expect(page.locator("#run-forgetting")).to_be_hidden()
    with rest(service, name, key) as api:
        assert api.get(f"/memories/{flight_id}").json()["status"] == "forgotten"
        assert api.post(f"/memories/{flight_id}/restore").status_code == 200  # restorable, as promised


async def test_dark_theme_is_remembered(page, service, ui_tenant):
    name, key = ui_tenant
    with rest(service, name, key) as api:
        api.post("/memories", json={"content": "The user prefers dark mode", "type": "preference"})
    await log_in(page, service, name, key)
    await expect(page.locator("#memory-table tbody tr")).to_have_count(1)
    light = await page.evaluate("getComputedStyle(document.body).backgroundColor")
    await page.emulate_media(color_scheme="dark")  # "auto" follows the system
    system_dark = await page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert system_dark != light
    await page.emulate_media(color_scheme="light")
    await page.click("#theme")  # auto -> light
    await page.click("#theme")  # light -> dark
    await expect(page.locator("#theme")).to_have_text("Theme: dark")
    dark = await page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert dark == system_dark
    await screenshot(page, "memories-dark")
    await page.reload()
    await expect(page.locator("html")).to_have_attribute("data-theme", "dark")


ODD = "a+b@x.io"  # '+' would read as a space in a query string sent unescaped


async def owners_shown(page) -> list[str]:
    """Whose each listed memory is, as its row says: a user id or "shared"."""
    cells = page.locator("#memory-table tbody td.owner")
    return await cells.evaluate_all("cells => cells.map(c => (c.querySelector('.user-link, .shared')).textContent)")


async def pick(page, selector: str) -> None:
    await page.click("#user-picked")
    await page.click(f"#user-options {selector}")
    await expect(page.locator("#user-picker")).not_to_have_attribute("open", "")


async def test_user_picker_filters_the_list_and_search(page, service, ui_tenant):
    name, key = ui_tenant
    shared = [
        {"content": "Support hours are 9 to 5 on weekdays: parcel questions go to the courier desk"},
        {"content": "Refunds for a lost parcel take five working days", "type": "fact"},
    ]
    with rest(service, name, key) as api:
        api.post("/memories/batch", json={"items": shared}).raise_for_status()
    await log_in(page, service, name, key)
    rows = page.locator("#memory-table tbody tr")
    await expect(rows).to_have_count(2)
    await page.click("#user-picked")
    empty = "No users yet: memories written with a user_id appear here."
    await expect(page.locator("#users-empty")).to_have_text(empty)
    await page.keyboard.press("Escape")
    await expect(page.locator("#user-picker")).not_to_have_attribute("open", "")

    alice = "alice@example.com"
    items = [
        {"content": "Alice's parcel went to the old address on Elm", "user_id": alice, "agent_id": "support-bot"},
        {"content": "Alice prefers email over phone calls", "type": "preference", "user_id": alice},
        {"content": "The parcel for order 77 arrived with a cracked lid", "user_id": ODD},
        {"content": "Wants the parcel left with the neighbour at number 12", "user_id": ODD, "type": "preference"},
        {"content": "Bob's parcel is stuck in customs", "user_id": "bob:42|x~y=z"},
    ]
    with rest(service, name, key) as api:
        written = api.post("/memories/batch", json={"items": items}).json()["results"]
        api.post(f"/memories/{written[3]['memory']['id']}/forget").raise_for_status()
    await page.reload()
    await expect(rows).to_have_count(6)  # every user's and the shared ones
    await expect(page.locator("#scope")).to_have_attribute("data-scope", "all")

    await page.click("#user-picked")  # the users by id, with their counts
    options = page.locator("#user-options [data-user]")
    await expect(options).to_have_count(3)
    await expect(options.nth(0)).to_have_attribute("data-user", ODD)
    await expect(page.locator(f'#user-options [data-user="{ODD}"] .user-count')).to_have_text("1 active · 1 forgotten")
    await expect(page.locator(f'#user-options [data-user="{alice}"] .user-count')).to_have_text("2 active")
    await expect(page.locator('#user-options [data-user="bob:42|x~y=z"] .user-count')).to_have_text("1 active")
    await page.fill("#user-prefix", "a+")  # found by the start of the id
    await expect(options).to_have_count(1)
    await page.fill("#user-prefix", "nobody")
    await expect(page.locator("#users-empty")).to_have_text("No user id starts with “nobody”.")
    await page.fill("#user-prefix", "al")
    await expect(options).to_have_count(1)
    await page.press("#user-prefix", "Enter")  # picks the first user shown
    await expect(page.locator("#user-picked")).to_have_text(alice)
    await expect(rows).to_have_count(4)  # alice's and the shared ones, no other user's
    assert sorted(await owners_shown(page)) == [alice, alice, "shared", "shared"]
    await expect(page.locator("#memory-table tbody td.owner .agent")).to_have_text(["agent support-bot"])
    await expect(page.locator("#counts-scope")).to_contain_text(f"{alice}'s memories and the shared ones")
    await expect(page.locator("#counts [data-status=active] strong")).to_have_text("4")
    await expect(page.locator("#timeline-caption")).to_contain_text("4 memories")
    await fits_the_screen(page)
    await screenshot(page, "users-picked")

    await page.check("#own-only")  # theirs only, without the shared ones
    await expect(rows).to_have_count(2)
    assert await owners_shown(page) == [alice, alice]
    await expect(page.locator("#timeline-caption")).to_contain_text("2 memories")
    await expect(page.locator("#counts [data-status=active] strong")).to_have_text("2")  # the counts follow
    await expect(page.locator("#counts-scope")).to_contain_text(f"{alice}'s own memories")
    await page.reload()  # the choice stays with the session
    await expect(page.locator("#user-picked")).to_have_text(alice)
    await expect(page.locator("#own-only")).to_be_checked()
    await expect(rows).to_have_count(2)

    await page.click("#nav a[data-view=search]")  # search looks within the same user
    await expect(page.locator("#scope")).to_be_visible()
    await page.fill("#search-form input[name=query]", "parcel")
    await page.fill("#search-form input[name=top_k]", "20")
    await page.click("#search-form button")
    hits = page.locator("#hits .hit")
    await expect(hits).to_have_count(1)
    await expect(hits.first).to_contain_text("Alice's parcel went to the old address")
    await expect(hits.first.locator(".owner")).to_contain_text(alice)
    await page.uncheck("#own-only")  # the search is redone: now with the shared ones
    await expect(hits).to_have_count(3)
    texts = " ".join(await hits.all_text_contents())
    assert "Support hours" in texts and "Refunds" in texts and "cracked lid" not in texts and "customs" not in texts

    await pick(page, f'[data-user="{ODD}"]')  # an id with + and @ in the query string and the body
    await expect(page.locator("#user-picked")).to_have_text(ODD)
    await expect(hits).to_have_count(3)  # ODD's active one and the two shared
    texts = " ".join(await hits.all_text_contents())
    assert "cracked lid" in texts and "Alice" not in texts and "neighbour" not in texts  # the forgotten one stays out
    await page.click("#nav a[data-view=memories]")
    await expect(rows).to_have_count(3)
    assert sorted(await owners_shown(page)) == [ODD, "shared", "shared"]
    await expect(page.locator("#counts [data-status=active] strong")).to_have_text("3")
    await expect(page.locator("#counts [data-status=forgotten] strong")).to_have_text("1")
    await expect(page.locator("#notice")).to_be_hidden()  # no request refused the id
    await page.click("#counts [data-status=forgotten]")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text("neighbour at number 12")
    await page.click("#counts [data-status=active]")
    await page.check("#own-only")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text("cracked lid")

    await pick(page, "[data-scope=shared]")  # the tenant's own memories alone
    await expect(page.locator("#own-only-field")).to_be_hidden()
    await expect(rows).to_have_count(2)
    assert await owners_shown(page) == ["shared", "shared"]
    await expect(page.locator("#counts [data-status=active] strong")).to_have_text("2")
    await pick(page, "[data-scope=all]")
    await expect(rows).to_have_count(6)
    await page.click('#memory-table tbody .user-link[data-user="bob:42|x~y=z"]')  # a row's user picks them
    await expect(page.locator("#user-picked")).to_have_text("bob:42|x~y=z")
    await expect(rows).to_have_count(3)
    await expect(page.locator("#detail")).to_be_hidden()

    await page.click("#logout")  # the user picked leaves with the key
    await log_in(page, service, name, key)
    await expect(rows).to_have_count(6)
    await expect(page.locator("#user-picked")).to_have_text("All users")


@BOTH
async def test_user_picker_pages_through_many_users(page, service, ui_tenant):
    name, key = ui_tenant
    items = [{"content": f"Customer {i} asked about invoice {i}", "user_id": f"cust-{i:03d}"} for i in range(60)]
    with rest(service, name, key) as api:
        api.post("/memories/batch", json={"items": items}).raise_for_status()
    await log_in(page, service, name, key)
    await expect(page.locator("#memory-table tbody tr")).to_have_count(50)
    await page.click("#user-picked")
    options = page.locator("#user-options [data-user]")
    await expect(options).to_have_count(50)
    await expect(page.locator("#users-shown")).to_have_text("50 users shown")
    await fits_the_screen(page)
    await screenshot(page, f"user-picker-{page.viewport_size['width']}", full_page=False)
    await page.click("#more-users")
    await expect(options).to_have_count(60)
    await expect(page.locator("#more-users")).to_be_hidden()
    await expect(page.locator("#users-shown")).to_have_text("60 users")
    await page.fill("#user-prefix", "cust-05")
    await expect(options).to_have_count(10)
    await expect(page.locator("#more-users")).to_be_hidden()
    await page.locator('#user-options [data-user="cust-057"]').click()
    await expect(page.locator("#memory-table tbody tr")).to_have_count(1)
    await expect(page.locator("#memory-table tbody tr")).to_contain_text("invoice 57")
    await fits_the_screen(page)


@BOTH
async def test_a_newcomer_adds_a_memory_is_told_how_to_connect_and_a_new_tab_stays_logged_in(page, service, ui_tenant):
    name, key = ui_tenant
    await log_in(page, service, name, key)
    # An empty tenant says how memories get here, with this service's MCP URL (never the key).
    await expect(page.locator("#empty")).to_contain_text("No memories yet.")
    await expect(page.locator("#mcp-url")).to_have_text(f"{service.url}/t/{name}/mcp")
    assert key not in await page.locator("#empty").inner_text()
    await fits_the_screen(page)
    await screenshot(page, f"empty-{page.viewport_size['width']}")

    await page.fill("#add-form [name=content]", "The user prefers window seats")
    await page.select_option("#add-form [name=type]", "preference")
    await page.click("#add-form button")
    await expect(page.locator("#notice")).to_contain_text("Added.")
    row = page.locator("#memory-table tbody tr")
    await expect(row).to_have_count(1)
    await expect(row.first).to_contain_text("The user prefers window seats")
    await expect(row.first).to_contain_text("preference")
    await expect(page.locator("#add-form [name=content]")).to_have_value("")
    await page.fill("#add-form [name=content]", "The user prefers window seats")
    await page.click("#add-form button")
    await expect(page.locator("#notice")).to_contain_text("Already known (duplicate)")
    await expect(row).to_have_count(1)

    # Filters that match nothing offer to clear them, rather than the newcomer's text.
    await page.fill("#filters [name=contains]", "no such thing")
    await expect(page.locator("#empty")).to_contain_text("No memories match these filters.")
    await page.click("#clear-filters")
    await expect(row).to_have_count(1)

    # A new tab of the same browser is logged in by the open one; logging out there logs out both.
    other = await page.context.new_page()
    await other.goto(f"{service.url}/t/{name}/ui")
    await expect(other.locator("#memory-table tbody tr")).to_have_count(1)
    await expect(other.locator("#login-view")).to_be_hidden()
    await other.click("#logout")
    await expect(page.locator("#login-view")).to_be_visible()
    await expect(page.locator("#login-error")).to_have_text("Logged out in another tab.")
    await other.close()


async def test_the_detail_of_a_memory_the_filter_no_longer_shows_closes(page, service, ui_tenant):
    name, key = ui_tenant
    with rest(service, name, key) as api:
        api.post("/memories", json={"content": "The user lives in Berlin"}).raise_for_status()
        api.post(
            "/memories", json={"content": "The user moved to Paris, the user lives in Paris now"}
        ).raise_for_status()
    await log_in(page, service, name, key)
    await page.select_option("#filters [name=status]", "superseded")
    await page.locator("#memory-table tbody tr").first.click()
    await expect(page.locator("#detail")).to_contain_text("The user lives in Berlin")
    await page.select_option("#filters [name=status]", "active")
    await expect(page.locator("#memory-table tbody tr")).to_have_count(1)
    await expect(page.locator("#detail")).to_be_hidden()


@BOTH
async def test_a_short_timeline_writes_each_date_once(page, service, ui_tenant):
    name, key = ui_tenant
    items = [
        {"content": f"The user walked {n} km", "type": "event", "occurred_at": f"2026-05-0{day}T10:00:00Z"}
        for n, day in ((3, 4), (5, 5))
    ]
    with rest(service, name, key) as api:
        api.post("/memories/batch", json={"items": items}).raise_for_status()
    await log_in(page, service, name, key)
    await expect(page.locator("#timeline .timeline-bar")).to_have_count(2)  # two days: fewer dates than ticks
    labels = await page.locator("#timeline .tick").all_text_contents()
    assert labels and len(labels) == len(set(labels)), labels
