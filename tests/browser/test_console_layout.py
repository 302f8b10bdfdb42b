"""The console's layout in Debian's Chromium: at 1280 x 800 every page's main table fits without scrolling sideways
(a log, wider by nature, scrolls inside its own region with its first column kept in view), and at 390 pixels wide
the live table and the station page are usable: the page itself never scrolls sideways, and they pass axe-core."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from playwright.async_api import Browser, Page

from tests.browser.console import ServedConsole, assert_accessible, sign_in, station_on_a_new_site

pytestmark = pytest.mark.asyncio(loop_scope="session")

STATION = "CS-LAYOUT-0001"
# Pages whose main table must fit a 1280-pixel window as it is.
FITTING = (
    "",
    "/connectors",
    "/sites",
    f"/stations/{STATION}",
    "/sessions",
    "/webhooks",
    "/audit",
    "/applications",
    "/groups",
    "/operators",
    "/meters",
    "/alerts",
)
MEASURE = """() => ({
    page: document.documentElement.scrollWidth - window.innerWidth,
    tables: [...document.querySelectorAll('main table')].map(t => ({
        caption: t.caption ? t.caption.textContent.trim() : t.className,
        over: t.scrollWidth - t.clientWidth,
        sticky: getComputedStyle(t.querySelector('tr > :first-child')).position,
    })),
})"""


async def _a_busy_station(console: ServedConsole) -> None:
    station = await station_on_a_new_site(console, STATION)
    await station.connect()
    await station.boot(vendor="Vendor", model="Model")
    await station.status(1, "Faulted", "GroundFailure")
    await station.start(2, "TAG-0123456789", 1000)


@asynccontextmanager
async def _window(browser: Browser, console: ServedConsole, width: int, height: int) -> AsyncIterator[Page]:
    """A signed-in page of that size; closed after, so that the live table's stream ends before the server does."""
    context = await browser.new_context(viewport={"width": width, "height": height})
    try:
        page = await context.new_page()
        await sign_in(page, console)
        yield page
    finally:
        await context.close()


async def test_at_1280_by_800_no_page_and_no_main_table_scrolls_sideways(
    browser: Browser, console: ServedConsole
) -> None:
    await _a_busy_station(console)
    async with _window(browser, console, 1280, 800) as page:
        for path in FITTING:
            await page.goto(console.url + path)
            measured = await page.evaluate(MEASURE)
            assert measured["page"] <= 0, path
            assert [t["caption"] for t in measured["tables"] if t["over"] > 1] == [], path


async def test_a_log_wider_than_the_window_scrolls_in_its_region_with_its_first_column_in_view(
    browser: Browser, console: ServedConsole
) -> None:
    await _a_busy_station(console)
    async with _window(browser, console, 1280, 800) as page:
        await page.goto(f"{console.url}/stations/{STATION}/messages")
        measured = await page.evaluate(MEASURE)
    assert measured["page"] <= 0
    assert [t["sticky"] for t in measured["tables"]] == ["sticky"]


@pytest.mark.parametrize("path", ["/connectors", f"/stations/{STATION}"])
async def test_at_390_pixels_wide_the_live_table_and_the_station_page_never_scroll_the_page_sideways(
    browser: Browser, console: ServedConsole, path: str
) -> None:
    await _a_busy_station(console)
    async with _window(browser, console, 390, 844) as page:
        await page.goto(console.url + path)
        measured = await page.evaluate(MEASURE)
        await assert_accessible(page, f"{path} at 390 pixels")
    assert measured["page"] <= 0
    # What does not fit scrolls inside its table, whose first column (the row's name) stays in view.
    assert all(t["sticky"] == "sticky" for t in measured["tables"] if t["over"] > 1)
