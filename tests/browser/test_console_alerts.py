"""Alerts in Debian's Chromium, against the whole app served on loopback with its alert workers running under a
ManualClock the test advances: an owner sets the mail server (a real aiosmtpd server) and a rule, with a refused
threshold on the way; a station goes offline past the threshold, one mail arrives, the navigation's badge counts
the alert and the owner acknowledges it from the list. Each page is scanned by axe-core in its empty, error and
filled states. Waits are on conditions."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from chargenet.clock import ManualClock
from chargenet.store.models import StationPresence
from tests.browser.console import (
    assert_accessible,
    csp_complaints,
    follow,
    served_console,
    sign_in,
    station_on_a_new_site,
)
from tests.support.smtp import smtp_server

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def advancing_until(
    clock: ManualClock, condition: Callable[[], object], what: str, timeout: float = 10.0
) -> None:
    """Move the clock on by the workers' shortest pause until `condition` holds: they wake on the clock."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        clock.advance(5)
        await asyncio.sleep(0.05)


async def test_an_owner_sets_up_alerts_and_acknowledges_the_one_a_station_offline_raises(
    browser: Browser, tmp_path: Path
) -> None:
    clock = ManualClock(datetime.now(UTC))
    with smtp_server() as smtp:
        async with served_console(tmp_path, clock=clock) as console:
            await station_on_a_new_site(console, "ST-9")
            context = await browser.new_context(viewport={"width": 1280, "height": 900})
            page = await context.new_page()
            complaints = csp_complaints(page)
            try:
                await sign_in(page, console)
                await follow(page, page.get_by_role("link", name="Alerts", exact=True))
                await expect(page.get_by_text("No alerts.")).to_be_visible()
                await assert_accessible(page, "alert list, empty")

                await follow(page, page.get_by_role("link", name="Mail server"))
                await page.get_by_label("Host").fill(smtp.host)
                await page.get_by_label("Port").fill(str(smtp.port))
                await page.get_by_label("Encryption").select_option("none")
                await page.get_by_label("From address").fill("alerts@acme.test")
                await page.get_by_role("button", name="Save mail server").click()
                await expect(page.get_by_label("Host")).to_have_value(smtp.host)
                await assert_accessible(page, "mail server, set")

                await follow(page, page.get_by_role("link", name="Rules"))
                await expect(page.get_by_text("No rules: nothing raises an alert yet.")).to_be_visible()
                await assert_accessible(page, "alert rules, empty")
                await page.get_by_label("Condition").select_option("station_offline")
                await page.get_by_label("Longer than (minutes)").fill("-5")
                await page.get_by_label("Mail to").fill("ops@acme.test")
                await page.get_by_role("button", name="Create rule").click()
                await expect(page.get_by_text("Longer than (minutes): must be 1 to 10080")).to_be_visible()
                await assert_accessible(page, "alert rules, refused threshold")
                await page.get_by_label("Longer than (minutes)").fill("10")
                await page.get_by_role("button", name="Create rule").click()
                await expect(page.get_by_role("link", name="Station offline")).to_be_visible()
                await assert_accessible(page, "alert rules, one rule")

                async with console.context.store.transaction() as session:
                    session.add(
                        StationPresence(
                            station_id="ST-9", connected=False, connected_at=clock.now(), disconnected_at=clock.now()
                        )
                    )
                clock.advance(600)
                await advancing_until(clock, lambda: smtp.inbox.received, "the alert's mail")
                assert smtp.inbox.subjects == ["[chargenet] Station offline: station ST-9 at Harbour"]

                await follow(page, page.get_by_role("link", name="Alerts", exact=False).first)
                await expect(page.get_by_text("1 open", exact=True)).to_be_visible()
                await expect(
                    page.get_by_role("cell", name="Station offline: station ST-9 at Harbour", exact=True)
                ).to_be_visible()
                await assert_accessible(page, "alert list, one open")
                await page.get_by_role("button", name="Acknowledge Station offline: station ST-9 at Harbour").click()
                await expect(page.get_by_role("cell", name="operator owner@acme.test", exact=False)).to_be_visible()
                await assert_accessible(page, "alert list, acknowledged")
                assert complaints == []
            finally:
                await context.close()
