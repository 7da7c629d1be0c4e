"""A real browser for the UI tests: Debian's chromium driven by Playwright (no browser download).
Skipped, with the reason, where no chromium is installed (`make test` installs it when it can)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

ARTIFACTS = ROOT / "test-artifacts" / "ui"
# Flags for a headless run as root on a closed network (see the env notes on Chromium).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator:
    executable = chromium_path()
    if executable is None:
        pytest.skip("no chromium installed (apt-get install chromium; `make test` does it as root)")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        await launched.close()


VIEWPORTS = {"desktop": {"width": 1400, "height": 900}, "phone": {"width": 400, "height": 860}}


@pytest.fixture
async def page(browser, request) -> AsyncIterator:
    """A fresh tab at desktop size, or at the size named by an indirect parameter ("phone")."""
    viewport = VIEWPORTS[getattr(request, "param", "desktop")]
    context = await browser.new_context(viewport=viewport, locale="en-US")
    page = await context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())  # the confirmations of forget and purge
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # Whatever the strict CSP blocks (an inline style, a foreign URL) shows as a console error.
    page.on("console", lambda msg: "Content Security Policy" in msg.text and errors.append(msg.text))
    yield page
    await context.close()
    assert errors == [], errors


async def screenshot(page, name: str, full_page: bool = True) -> Path:
    """The whole page, or what the screen shows (full_page=False: an open popup at its place)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    await page.evaluate("window.scrollTo(0, 0)")  # a sticky header is drawn where the page is scrolled to
    await page.screenshot(path=str(path), full_page=full_page)
    return path
