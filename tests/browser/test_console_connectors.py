"""The live connector status page in Debian's Chromium, with a simulated station: a status the station reports
changes its row in the open page without a reload, and the row turns offline when the station goes away. The
page passes axe-core and its script keeps to the CSP. Waits are on conditions, never on time."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect

from tests.browser.console import (
    ServedConsole,
    assert_accessible,
    csp_complaints,
    sign_in,
    station_on_a_new_site,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_a_status_the_station_reports_changes_its_row_in_the_open_page(
    browser: Browser, console: ServedConsole
) -> None:
    station = await station_on_a_new_site(console, "CS-TABLE")
    page = await (await browser.new_context(viewport={"width": 1400, "height": 900})).new_page()
    complaints = csp_complaints(page)
    try:
        await station.connect()
        await station.boot(vendor="Sim", model="Table")
        await station.status(1, "Available")
        await sign_in(page, console)
        await page.get_by_role("navigation", name="Console").get_by_role("link", name="Live status").click()
        await expect(page.get_by_role("heading", name="Live connector status")).to_be_visible()
        await expect(page.locator("#live-state")).to_have_text("Live updates: on.")
        await page.evaluate("window.notReloaded = true")  # gone if the page were read again
        row = page.locator("#live-CS-TABLE-1")
        await expect(row).to_contain_text("connected")
        await assert_accessible(page, "live status")

        await station.status(1, "Preparing")
        await station.status(1, "Charging")
        await expect(row.locator(".status")).to_have_text("Charging")
        await expect(row).to_contain_text("StatusNotification")

        await station.close()
        await expect(row.locator(".status")).to_have_text("Offline")
        await expect(row).to_contain_text("last reported Charging")
        assert await page.evaluate("window.notReloaded === true")
        await assert_accessible(page, "live status, station offline")
        assert not complaints
    finally:
        await page.context.close()
        await station.close()
