"""A session's meter-value chart, a meter's poll health and sessions, and the buses page in Debian's Chromium:
an axe-core scan of each, empty and filled, wide and narrow. Waits are on conditions, never on time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, expect
from sqlalchemy import insert
from sqlalchemy.dialects import sqlite

from chargenet.clock import ManualClock
from chargenet.meters.runtime import MeterPolling
from chargenet.services import meters, sites, stations
from chargenet.services.callers import OPERATOR
from chargenet.store.models import EdgeTransaction, MeterPollHealth, MeterSample, MeterSession
from tests.browser.console import ServedConsole, assert_accessible, served_console, sign_in
from tests.factories import edge_row
from tests.support.processes import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(loop_scope="session")
async def console(tmp_path: Path) -> AsyncIterator[ServedConsole]:
    """The console on a clock that stands still: the process's meter worker reads the meters once at its start,
    before the test makes any, and then waits for its next reload (2 s on this clock), so it never polls the test's
    meter nor replaces the poll health the test wrote for it with its own."""
    async with served_console(tmp_path, clock=ManualClock(datetime.now(UTC))) as served:
        [polling] = [worker for worker in served.context.workers if isinstance(worker, MeterPolling)]
        await eventually(lambda: polling._configured)
        yield served


async def charged(console: ServedConsole) -> str:
    """A site with station CS-1 (transaction 1, charted) and CS-M (its meter, with health and a session)."""
    store, now = console.context.store, console.context.clock.now()
    cipher = console.context.keys.credential_cipher()
    hasher = console.context.keys.secret_hasher()
    async with store.transaction() as session:
        site = await sites.create_site(session, OPERATOR, cipher, company_id=console.company_id, name="Depot", now=now)
        for station_id in ("CS-1", "CS-M"):
            await stations.create_station(
                session, OPERATOR, hasher, cipher, site_id=site.id, station_id=station_id, now=now
            )
        meter = await meters.create_meter(
            session,
            OPERATOR,
            site_id=site.id,
            station_id="CS-M",
            profile="sdm630",
            unit_id=1,
            tcp="192.0.2.7:502",
            now=now,
        )
    start = now - timedelta(hours=2)
    async with store.transaction() as session:
        await session.execute(
            insert(EdgeTransaction).values(edge_row(1, site.id, start, id_tag="TAG1", meter_stop=23_000))
        )
        await session.execute(
            insert(MeterSample),
            [
                {
                    "transaction_id": 1,
                    "station_id": "CS-1",
                    "at": start + timedelta(minutes=m),
                    "energy_wh": 1000 + 244 * m,
                }
                for m in range(1, 90)
            ],
        )
        await session.execute(
            insert(MeterSession).values(
                transaction_id=2,
                meter_id=meter.id,
                site_id=site.id,
                station_id="CS-M",
                charge_point_id="CS-M",
                connector_id=1,
                id_tag=meter.id_tag,
                meter_start_wh=500,
                started_at=start,
                last_charging_wh=2500,
                last_charging_at=start + timedelta(minutes=5),
            )
        )
        # The served console's meter runtime polls this bus too and writes the meter's health under the same key,
        # before or after this row: whichever comes first stays, and the bus page shows the bus either way.
        await session.execute(
            sqlite.insert(MeterPollHealth)
            .values(
                meter_id=meter.id,
                bus_key="tcp://192.0.2.7:502",
                owner="host:1:abc",
                reads=100,
                errors=3,
                timeouts=2,
                crc_errors=1,
                last_answer_at=now,
                last_error="timeout",
                dead=False,
                updated_at=now,
            )
            .on_conflict_do_nothing(index_elements=[MeterPollHealth.meter_id])
        )
    return meter.id


async def test_meter_value_and_bus_pages_pass_axe_empty_and_filled(browser: Browser, console: ServedConsole) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    try:
        await sign_in(page, console)
        await page.goto(f"{console.url}/meters/buses")
        await expect(page.get_by_role("cell", name="No bus polled yet.")).to_be_visible()
        await assert_accessible(page, "buses, empty")
    finally:
        await context.close()
    meter_id = await charged(console)
    for viewport in ({"width": 1280, "height": 900}, {"width": 360, "height": 740}):
        context = await browser.new_context(viewport=viewport)  # type: ignore[arg-type]
        page = await context.new_page()
        width = f"{viewport['width']}px"
        try:
            await sign_in(page, console)
            await page.goto(f"{console.url}/sessions/1")
            await expect(page.get_by_role("img", name="Energy delivered by session 1 over time")).to_be_visible()
            await assert_accessible(page, f"{width} session with its meter-value chart")
            await page.goto(f"{console.url}/sessions/2")
            await assert_accessible(page, f"{width} meter session without meter values")
            await page.goto(f"{console.url}/meters/{meter_id}")
            await expect(page.get_by_role("heading", name="Poll health")).to_be_visible()
            await assert_accessible(page, f"{width} meter with its health and sessions")
            await page.goto(f"{console.url}/meters")
            await assert_accessible(page, f"{width} meters with their health")
            await page.goto(f"{console.url}/meters/buses")
            await expect(page.get_by_role("rowheader", name="tcp://192.0.2.7:502")).to_be_visible()
            await assert_accessible(page, f"{width} buses, filled")
        finally:
            await context.close()
