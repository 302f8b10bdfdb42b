"""Browser tests drive Debian's Chromium (`/usr/bin/chromium`, installed by `make test`'s set-up) with Playwright.

Playwright never downloads a browser here: it is pointed at the system's executable. The flags keep Chromium
from reaching out to the network at start (this machine has none to reach) and from needing a GPU.

One Chromium serves the whole run (starting one takes seconds on a shared machine), each test in a context of its
own; so the browser tests, and the async fixtures they use, run in the session's event loop: each module says
`pytestmark = pytest.mark.asyncio(loop_scope="session")` (a module that does not fails with "attached to a
different loop"), and its async fixtures are `@pytest_asyncio.fixture(loop_scope="session")`.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from playwright.async_api import Browser, BrowserContext, Page, async_playwright

from tests.browser.console import ServedConsole, served_console

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


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        instance = await playwright.chromium.launch(executable_path=chromium_executable(), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            await instance.close()


@pytest_asyncio.fixture(loop_scope="session")
async def console(tmp_path: Path) -> AsyncIterator[ServedConsole]:
    """The whole app on loopback, its console signed in to as `console.OWNER`."""
    async with served_console(tmp_path) as served:
        yield served


@pytest_asyncio.fixture(loop_scope="session")
async def page(browser: Browser) -> AsyncIterator[Page]:
    context: BrowserContext = await browser.new_context()
    try:
        yield await context.new_page()
    finally:
        await context.close()
