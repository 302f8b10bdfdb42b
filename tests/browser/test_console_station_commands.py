"""The station page's reservation, local list and DataTransfer forms in Debian's Chromium with a simulated station:
each command sent from its form reaches the simulator, the station's answer comes into the region beside that
form, a bad value is named there without a trip to the station, and the page with its answers passes axe-core.
Waits are on conditions, never on time."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from playwright.async_api import Browser, expect

from tests.browser.console import ServedConsole, assert_accessible, csp_complaints, sign_in, station_on_a_new_site

BRUSSELS = ZoneInfo("Europe/Brussels")  # the console's default zone, the test company's

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_reservations_the_local_list_and_a_data_transfer_are_sent_from_the_station_page(
    browser: Browser, console: ServedConsole
) -> None:
    station = await station_on_a_new_site(console, "CS-CMD")
    station.answers["GetLocalListVersion"] = lambda _: {"listVersion": 3}
    station.answers["DataTransfer"] = lambda _: {"status": "Accepted", "data": "<i>pong</i>"}
    await station.connect()
    await station.boot()

    page = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
    complaints = csp_complaints(page)
    try:
        await sign_in(page, console)
        await page.goto(f"{console.url}/stations/CS-CMD")
        await expect(page.locator("#connection")).to_contain_text("Connected")
        await assert_accessible(page, "station, central-system commands")

        reserve = page.get_by_role("form", name="Reserve a connector")
        await reserve.get_by_label("Connector").select_option("2")
        await reserve.get_by_label("idTag it is reserved for").fill("TAG-R")
        await reserve.get_by_label("Reservation number").fill("41")
        await reserve.get_by_label("Expires (Europe/Brussels)").fill("2020-01-01T00:00")
        await reserve.get_by_role("button", name="Reserve").click()
        await expect(reserve.get_by_role("status")).to_contain_text("not sent")
        await expect(reserve.get_by_role("status")).to_contain_text("must be in the future")
        assert station.received_calls == []

        expires = f"{datetime.now(BRUSSELS) + timedelta(hours=2):%Y-%m-%dT%H:%M}"  # the reader's zone
        await reserve.get_by_label("Expires (Europe/Brussels)").fill(expires)
        await reserve.get_by_role("button", name="Reserve").click()
        await expect(reserve.get_by_role("status")).to_contain_text("the station answered Accepted")
        assert station.received_calls[-1][0] == "ReserveNow"
        assert station.received_calls[-1][1]["reservationId"] == 41

        cancel = page.get_by_role("form", name="Cancel a reservation")
        await cancel.get_by_label("Reservation number").fill("41")
        await cancel.get_by_role("button", name="Cancel reservation").click()
        await expect(cancel.get_by_role("status")).to_contain_text("the station answered Accepted")

        version = page.get_by_role("form", name="Version the station has")
        await version.get_by_role("button", name="Read local list version").click()
        await expect(version.get_by_role("status")).to_contain_text("the station has local list version 3")

        send_list = page.get_by_role("form", name="Send the site's list")
        await send_list.get_by_label("Version for the station to record").fill("4")
        await send_list.get_by_label("Differential", exact=False).check()
        page.once("dialog", lambda dialog: dialog.accept())  # sending it is confirmed first
        await send_list.get_by_role("button", name="Send local list").click()
        await expect(send_list.get_by_role("status")).to_contain_text("the station answered Accepted")
        assert station.received_calls[-1] == (
            "SendLocalList",
            {"listVersion": 4, "updateType": "Differential", "localAuthorizationList": []},
        )

        transfer = page.get_by_role("form", name="Vendor-specific message (DataTransfer)")
        await transfer.get_by_label("Vendor id").fill("com.example")
        await transfer.get_by_label("Message id (optional)").fill("Ping")
        await transfer.get_by_role("button", name="Send data transfer").click()
        await expect(transfer.get_by_role("status")).to_contain_text("the station answered Accepted, with data:")
        await expect(transfer.locator("pre code")).to_have_text("<i>pong</i>")  # as text, not markup
        assert page.url.endswith("/stations/CS-CMD")  # every answer came into the page, which stayed
        await assert_accessible(page, "station, central-system answers shown")
        assert complaints == []
    finally:
        await page.context.close()
        await station.close()
