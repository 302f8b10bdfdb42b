"""Browser tests drive Debian's Chromium (`/usr/bin/chromium`, installed by `make test`'s set-up) with Playwright.

Playwright never downloads a browser here: it is pointed at the system's executable. The flags keep Chromium
from reaching out to the network at start (this machine has none to reach) and from needing a GPU.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, BrowserContext, Page, async_playwright

CHROMIUM_ARGS = [
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def chromium_executable() -> str:
    executable = shutil.which("chromium")
    assert executable, "Debian's chromium is needed for the browser tests: `make test` installs it"
    return executable


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        instance = await playwright.chromium.launch(executable_path=chromium_executable(), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            await instance.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    context: BrowserContext = await browser.new_context()
    try:
        yield await context.new_page()
    finally:
        await context.close()
