"""The station page's reservation, local list and DataTransfer forms in Debian's Chromium with a simulated station:
each command sent from its form reaches the simulator, the station's answer comes into the region beside that
form, a bad value is named there without a trip to the station, and the page with its answers passes axe-core.
Waits are on conditions, never on time."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from ocpp.v201 import call
from playwright.async_api import Browser, expect
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from tests.browser.console import (
    ServedConsole,
    a_site,
    assert_accessible,
    csp_complaints,
    sign_in,
    station_on_a_new_site,
)
from tests.factories import add_station
from tests.integration.edge.test_ocpp201 import basic
from tests.integration.edge.test_ocpp201_commands import Answering

BRUSSELS = ZoneInfo("Europe/Brussels")  # the console's default zone, the test company's
STATION_PASSWORD = "0123456789abcdef"  # a 2.0.1 station has one (security profile 1)

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


async def test_a_2_0_1_station_has_its_variables_read_from_the_station_page(
    browser: Browser, console: ServedConsole
) -> None:
    site_id = await a_site(console, "Quay")
    context = console.context
    async with context.store.transaction() as session:
        await add_station(session, context.keys, site_id, "CS-201", context.clock.now(), password=STATION_PASSWORD)
    socket = await connect(
        console.url.replace("http://", "ws://").removesuffix("/console") + "/ocpp/CS-201",
        subprotocols=[Subprotocol("ocpp2.0.1")],
        additional_headers=basic("CS-201", STATION_PASSWORD),
    )
    point = Answering("CS-201", socket)
    reader = asyncio.create_task(point.start())
    page = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
    complaints = csp_complaints(page)
    try:
        await point.call(call.BootNotification(charging_station={"vendorName": "V", "model": "M"}, reason="PowerUp"))
        assert context.edge is not None
        await context.edge.message_log.run_once()  # the store shows it connected over 2.0.1 now
        await sign_in(page, console)
        await page.goto(f"{console.url}/stations/CS-201")
        await expect(page.locator("#connection")).to_contain_text("Connected")
        await assert_accessible(page, "station of OCPP 2.0.1, variables")

        read = page.get_by_role("form", name="Read a variable")
        await read.get_by_label("Component").fill("OCPPCommCtrlr")
        await read.get_by_label("Variable").fill("HeartbeatInterval")
        await read.get_by_role("button", name="Read variable").click()
        await expect(read.get_by_role("status")).to_contain_text("OCPPCommCtrlr.HeartbeatInterval")
        await assert_accessible(page, "station of OCPP 2.0.1, a variable read")
        assert point.received[-1][0] == "GetVariables"
        assert complaints == []
    finally:
        await page.context.close()
        reader.cancel()
        await socket.close()
