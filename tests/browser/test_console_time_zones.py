"""Time zones in Debian's Chromium, on a clock standing on the night Brussels' clocks go back: the time-zone page
(an unknown name refused, one's own zone chosen, the company's changed), and the sessions list read in the
operator's zone, a filter on a time shown twice answered with the reading taken and a link to the other; each
state passes axe-core. Waits are on conditions, never on time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Page, expect
from sqlalchemy import insert

from chargenet.clock import ManualClock
from chargenet.services import sites, stations
from chargenet.services.callers import OPERATOR
from chargenet.store.models import EdgeTransaction
from tests.browser.console import ServedConsole, assert_accessible, follow, served_console, sign_in
from tests.factories import edge_row

pytestmark = pytest.mark.asyncio(loop_scope="session")

CHANGE = datetime(2026, 10, 25, 1, 0, tzinfo=UTC)  # 03:00 +02:00 becomes 02:00 +01:00 in Brussels


@pytest_asyncio.fixture(loop_scope="session")
async def console(tmp_path: Path) -> AsyncIterator[ServedConsole]:
    async with served_console(tmp_path, clock=ManualClock(CHANGE + timedelta(hours=2))) as served:
        yield served


async def _sessions_around_the_change(console: ServedConsole) -> None:
    store, now = console.context.store, console.context.clock.now()
    cipher, hasher = console.context.keys.credential_cipher(), console.context.keys.secret_hasher()
    async with store.transaction() as session:
        site = await sites.create_site(session, OPERATOR, cipher, company_id=console.company_id, name="Depot", now=now)
        await stations.create_station(session, OPERATOR, hasher, cipher, site_id=site.id, station_id="CS-1", now=now)
    async with store.transaction() as session:
        await session.execute(
            insert(EdgeTransaction),
            [
                edge_row(1, site.id, CHANGE - timedelta(minutes=20), id_tag="FIRST"),  # 02:40 +02:00
                edge_row(2, site.id, CHANGE + timedelta(minutes=40), id_tag="SECOND"),  # 02:40 +01:00
            ],
        )


async def test_an_operator_chooses_their_zone_and_the_company_s_on_an_accessible_page(
    page: Page, console: ServedConsole
) -> None:
    await sign_in(page, console)
    await follow(page, page.get_by_role("link", name="Times in Europe/Brussels"))
    await expect(page.get_by_role("heading", name="Time zone", exact=True)).to_be_visible()
    await assert_accessible(page, "time zone page")
    own = page.get_by_label("Time zone (IANA name)", exact=True)
    await own.fill("Europe/Atlantis")
    await page.get_by_role("button", name="Save my time zone").click()
    await expect(page.get_by_text("'Europe/Atlantis' is not a time zone of the tz database")).to_be_visible()
    await expect(own).to_have_attribute("aria-invalid", "true")
    await assert_accessible(page, "time zone page, an unknown name refused")
    await own.fill("America/New_York")
    await page.get_by_role("button", name="Save my time zone").click()
    await expect(page.get_by_role("status")).to_have_text(
        "Your time zone is saved: times are now shown in America/New_York."
    )
    await expect(page.get_by_role("link", name="Times in America/New_York")).to_be_visible()
    await page.get_by_label("Company time zone (IANA name)").fill("Asia/Tokyo")
    await page.get_by_role("button", name="Save the company's time zone").click()
    await expect(page.get_by_role("status")).to_have_text("The company's time zone is saved: Asia/Tokyo.")
    await assert_accessible(page, "time zone page, both saved")


async def test_the_sessions_list_reads_a_time_shown_twice_as_the_first_and_links_the_second(
    page: Page, console: ServedConsole
) -> None:
    await _sessions_around_the_change(console)
    await sign_in(page, console)
    await page.goto(f"{console.url}/sessions")
    rows = page.locator("table.sessions tbody tr")
    await expect(rows).to_have_count(2)
    await expect(rows.nth(0)).to_contain_text("2026-10-25 02:40:00 +01:00")
    await expect(rows.nth(1)).to_contain_text("2026-10-25 02:40:00 +02:00")
    await page.get_by_label("Started from (Europe/Brussels)").fill("2026-10-25T02:30")
    await page.get_by_role("button", name="Filter").click()
    notice = page.get_by_role("status").filter(has_text="happened twice")
    await expect(notice).to_contain_text("read as the first, 2026-10-25 02:30 +02:00")
    await expect(rows).to_have_count(2)
    await assert_accessible(page, "sessions, a time shown twice read as the first")
    await follow(page, page.get_by_role("link", name="Use the other, 2026-10-25 02:30 +01:00"))
    await expect(rows).to_have_count(1)
    await expect(rows.nth(0)).to_contain_text("SECOND")
    await assert_accessible(page, "sessions, the second reading chosen")
