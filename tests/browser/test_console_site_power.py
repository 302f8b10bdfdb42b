"""The site power page in Debian's Chromium: a circuit whose grid meter is silent falls back to its limit and says
so, its chart and the session sharing it are shown, a limit changed elsewhere reaches the open page by itself, and
axe-core finds nothing to fix. Waits are on conditions, never on time."""

from __future__ import annotations

from datetime import timedelta

import pytest
from playwright.async_api import Browser, expect
from sqlalchemy import select

from chargenet.services import circuits, grid_meters
from chargenet.services.callers import OPERATOR
from chargenet.store.models import SitePowerSample, Station
from tests.browser.console import (
    ServedConsole,
    assert_accessible,
    csp_complaints,
    follow,
    sign_in,
    station_on_a_new_site,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_the_power_page_shows_the_fallback_the_chart_and_the_sessions_and_follows_a_limit_change(
    browser: Browser, console: ServedConsole
) -> None:
    station = await station_on_a_new_site(console, "CS-POWER")
    context, now = console.context, console.context.clock.now()
    async with context.store.transaction() as session:
        site_id = (await session.scalars(select(Station.site_id).where(Station.id == "CS-POWER"))).one()
        meter = await grid_meters.create_grid_meter(
            session, OPERATOR, site_id=site_id, profile="sdm630", unit_id=1, now=now, tcp="127.0.0.1:9"
        )  # nothing answers there: the meter stays silent
        grid = await circuits.create_circuit(
            session, OPERATOR, site_id=site_id, name="Grid <main>", limit_amps=20.0, now=now, meter_id=meter.id
        )
        await circuits.place_station(session, OPERATOR, "CS-POWER", now=now, circuit_id=grid.id, phases="L1L2L3")
        for minutes in range(30, 0, -5):  # what earlier rounds kept for the chart
            at = now - timedelta(minutes=minutes)
            session.add(
                SitePowerSample(
                    circuit_id=grid.id, at=at, site_id=site_id, limit_a=20.0, measured_a=14.0, stations_a=6.0
                )
            )
    await station.connect()
    await station.boot()
    await station.start(1, "TAG-POWER")

    page = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
    complaints = csp_complaints(page)
    try:
        await sign_in(page, console)
        await page.goto(f"{console.url}/sites/{site_id}")
        await follow(page, page.get_by_role("link", name="Power", exact=True))
        await expect(page.get_by_role("heading", name="Power of Harbour")).to_be_visible()
        row = page.locator(f"#circuit-{grid.id}")
        await expect(row).to_contain_text("Grid <main>")  # as text, not markup
        await expect(row).to_contain_text("falls back to its limit: the meter is silent")
        await expect(page.get_by_role("img", name="Circuit Grid <main> over the last 6 hours")).to_be_visible()
        sessions = page.get_by_role("table").filter(has_text="Sessions in progress")
        await expect(sessions.get_by_role("row").filter(has_text="CS-POWER")).to_contain_text("charging")
        await assert_accessible(page, "site power, a silent meter and a session")

        # A limit changed elsewhere shows on the open page at its next refresh.
        async with context.store.transaction() as session:
            await circuits.update_circuit(session, OPERATOR, grid.id, now=context.clock.now(), limit_amps=32.0)
        await expect(row.locator("td").first).to_have_text("32", timeout=10_000)
        assert not complaints
    finally:
        await page.context.close()
        await station.close()
