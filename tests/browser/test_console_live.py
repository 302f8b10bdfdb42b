"""The station page in Debian's Chromium with a simulated station: it connects and boots, a remote start sent from
the page reaches the simulator and the station's answer is shown, its CALLERROR too; once it is gone a command is
refused with the reason, and the page shows it offline with its commands off. The station page, its message log,
and the sessions list and detail pass axe-core. Waits are on conditions, never on time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from playwright.async_api import Browser, expect
from sqlalchemy import func, select

from chargenet.edge.ocpp16.frames import Payload
from chargenet.simulators.station import AnswerWithError
from chargenet.store.models import OcppMessage, StationPresence
from tests.browser.console import (
    ServedConsole,
    assert_accessible,
    csp_complaints,
    sign_in,
    station_on_a_new_site,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

VENDOR = "<b>Vend</b>"  # station-supplied: shown as text


async def until(condition: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    """Wait for `condition`, looking every 20 ms (the process under test runs in this event loop)."""
    async with asyncio.timeout(within):
        while not await condition():
            await asyncio.sleep(0.02)


async def test_a_remote_start_from_the_station_page_reaches_the_station_and_its_answer_is_shown(
    browser: Browser, console: ServedConsole
) -> None:
    station = await station_on_a_new_site(console, "CS-LIVE")
    await station.connect()
    await station.boot(vendor=VENDOR, model="Sim 2")
    await station.status(1, "Available")

    page = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
    complaints = csp_complaints(page)
    try:
        await sign_in(page, console)
        await page.goto(f"{console.url}/stations/CS-LIVE")
        await expect(page.locator("#connection")).to_contain_text("Connected")
        await expect(page.locator("dl.facts")).to_contain_text(VENDOR)  # as text, not markup
        await assert_accessible(page, "station, connected")

        connector = page.get_by_role("form", name="Connector 1", exact=True)
        await connector.get_by_label("idTag to start charging with").fill("TAG-LIVE")
        await connector.get_by_role("button", name="Start charging").click()
        await expect(connector.get_by_role("status")).to_contain_text("the station answered Accepted")
        assert ("RemoteStartTransaction", {"connectorId": 1, "idTag": "TAG-LIVE"}) in station.received_calls
        assert page.url.endswith("/stations/CS-LIVE")  # the answer came into the page, which stayed

        station.answers["UnlockConnector"] = _refuse
        await connector.get_by_role("button", name="Unlock connector").click()
        await expect(connector.get_by_role("status")).to_contain_text("CALLERROR NotImplemented")

        configuration = page.get_by_role("form", name="Read")
        await configuration.get_by_role("button", name="Read configuration").click()
        await expect(configuration.get_by_role("cell", name="HeartbeatInterval")).to_be_visible()
        await assert_accessible(page, "station, answers shown")

        # The station charges (the session shows), then goes away while the page is open.
        started = await station.start(1, "TAG-LIVE", 1000)
        await station.stop(int(started["transactionId"]), 4500, "Remote")
        await station.close()
        await until(lambda: _not_connected(console))
        await connector.get_by_role("button", name="Start charging").click()
        await expect(connector.get_by_role("status")).to_contain_text("not sent")
        await expect(connector.get_by_role("status")).to_contain_text("is not connected")
        await page.reload()
        await expect(page.locator("#connection")).to_contain_text("Offline")
        await expect(page.locator("#commands-off")).to_contain_text(
            "Commands are off: station CS-LIVE is not connected"
        )
        await expect(
            page.get_by_role("form", name="Connector 1", exact=True).get_by_role("button", name="Start charging")
        ).to_be_disabled()
        await assert_accessible(page, "station, offline")

        await until(lambda: _logged(console, 12))  # the log is written a second behind
        await page.get_by_role("link", name="OCPP message log").click()
        await expect(page.get_by_role("cell", name="RemoteStartTransaction").first).to_be_visible()
        await assert_accessible(page, "message log")
        await page.get_by_label("Action").fill("StartTransaction")
        await page.get_by_role("button", name="Filter").click()
        await expect(page.get_by_role("cell", name="CALLRESULT")).to_be_visible()
        await assert_accessible(page, "message log, filtered")

        await page.get_by_role("navigation", name="Console").get_by_role("link", name="Sessions").click()
        row = page.get_by_role("row").filter(has_text="TAG-LIVE")
        await expect(row).to_contain_text("3.500")
        await expect(row).to_contain_text("Remote")
        await assert_accessible(page, "sessions")
        await row.get_by_role("link").first.click()
        await expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
        await expect(page.get_by_role("cell", name="StopTransaction").first).to_be_visible()
        await assert_accessible(page, "session")
        assert not complaints
    finally:
        await page.context.close()
        await station.close()


def _refuse(_: Payload) -> Payload:
    raise AnswerWithError("NotImplemented", "no")


async def _not_connected(console: ServedConsole) -> bool:
    """Gone from this process, and from the store's presence, which other processes (and the relay) go by."""
    edge = console.context.edge
    if edge is None or edge.is_connected("CS-LIVE"):
        return False
    async with console.context.store.read() as session:
        presence = await session.get(StationPresence, "CS-LIVE")
    return presence is not None and not presence.connected


async def _logged(console: ServedConsole, frames: int) -> bool:
    async with console.context.store.read() as session:
        count = await session.scalar(select(func.count()).select_from(OcppMessage))
    return (count or 0) >= frames
