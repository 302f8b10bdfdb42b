"""The overview in Debian's Chromium: a session a simulated station has just completed shows in today's energy
figure, the energy chart (its bar's title) and the chart's table of figures, whose day links to the session;
the page passes axe-core before and after, with the figures open. A station whose upstream cannot be reached is
named among the upstream links down. Waits are on conditions, never on time."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable

import pytest
from playwright.async_api import Browser, expect

from chargenet.services import sites
from chargenet.services.callers import OPERATOR
from chargenet.simulators.station import SimulatedStation
from chargenet.store.models import StationPresence
from tests.browser.console import (
    ServedConsole,
    assert_accessible,
    sign_in,
    station_on_a_new_site,
)
from tests.factories import add_station
from tests.support.ports import free_port

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_the_energy_chart_shows_a_session_a_station_just_completed(
    browser: Browser, console: ServedConsole
) -> None:
    context = console.context
    station = await station_on_a_new_site(console, "CS-ENERGY")
    await station.connect()
    await station.boot()
    await station.status(1, "Available")
    await until(lambda: _present(console, "CS-ENERGY"))  # the presence is written with the message log, behind
    page = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
    try:
        await sign_in(page, console)
        today = page.locator("dt", has_text="Energy delivered today").locator("xpath=following-sibling::dd[1]")
        await expect(today).to_have_text("0.000 kWh")
        await expect(page.locator("dt", has_text="Stations connected").locator("xpath=..")).to_contain_text(
            "100% of 1 online"
        )
        await assert_accessible(page, "overview, no energy yet")

        started = await station.start(1, "TAG-ENERGY", 1000)
        await station.stop(int(started["transactionId"]), 4500, "Local")
        # The overview's figures settle within a second of a commit: reload until they show it, as an operator would.
        async with asyncio.timeout(10):
            while True:
                await page.reload()
                if await today.inner_text() == "3.500 kWh":
                    break
                await asyncio.sleep(0.2)
        day = context.clock.now()
        bar = page.locator("#energy-chart svg rect title", has_text=f"{day:%d %b}: 3.5 kWh")
        await expect(bar).to_have_count(1)
        await page.get_by_text("The figures of the chart").click()
        row = page.locator("#energy-figures tr", has_text=day.date().isoformat())
        await expect(row).to_contain_text("3.500")
        await assert_accessible(page, "overview, a session completed, figures open")

        await row.get_by_role("link").click()
        session_row = page.get_by_role("row").filter(has_text="TAG-ENERGY")
        await expect(session_row).to_contain_text("3.500")
    finally:
        await page.context.close()
        await station.close()


async def test_a_station_whose_upstream_is_unreachable_is_named_among_the_links_down(
    browser: Browser, console: ServedConsole
) -> None:
    context = console.context
    cipher = context.keys.credential_cipher()
    async with context.store.transaction() as session:
        site = await sites.create_site(
            session, OPERATOR, cipher, company_id=console.company_id, name="Quay", now=context.clock.now()
        )
        await sites.update_site(
            session, OPERATOR, cipher, site.id, now=context.clock.now(), upstream_url=f"ws://127.0.0.1:{free_port()}"
        )
        await add_station(session, context.keys, site.id, "CS-AWAY", context.clock.now())
    ocpp = console.url.replace("http://", "ws://").removesuffix("/console") + "/ocpp"
    station = SimulatedStation(ocpp, "CS-AWAY")
    await station.connect()
    await station.boot()
    await until(lambda: _present(console, "CS-AWAY"))
    page = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
    try:
        await sign_in(page, console)
        down = page.locator("dt", has_text="Upstream links down").locator("xpath=following-sibling::dd[1]")
        await expect(down).to_have_text("1")
        await page.get_by_role("link", name="CS-AWAY").click()
        await expect(page.get_by_role("heading", name="Station CS-AWAY")).to_be_visible()
        # "now" until the link's first failed attempt is stored, then that attempt's reason.
        await expect(page.locator("#upstream-link")).to_have_text(re.compile(r"^down: the upstream cannot be reached"))
    finally:
        await page.context.close()
        await station.close()


async def until(condition: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    """Wait for `condition`, looking every 20 ms (the process under test runs in this event loop)."""
    async with asyncio.timeout(within):
        while not await condition():
            await asyncio.sleep(0.02)


async def _present(console: ServedConsole, station_id: str) -> bool:
    async with console.context.store.read() as session:
        presence = await session.get(StationPresence, station_id)
    return presence is not None and presence.connected
