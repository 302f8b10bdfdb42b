"""The station page's central-system commands (reservations, the local list, DataTransfer) sent to a simulated
station on a real WebSocket, through a real chargenet on SQLite: the station's answer shown as it
came, bad input refused before anything is sent, the refusal on a site with an upstream, an offline station, and a
viewer who gets no forms."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import httpx
import pytest
from ocpp.v201 import call

from chargenet.services import localauth
from chargenet.services.callers import OPERATOR
from chargenet.simulators.station import AnswerWithError, SimulatedStation
from tests.integration.edge.conftest import Served, served, station  # noqa: F401  (fixtures)
from tests.integration.edge.test_ocpp201 import at, station_201
from tests.integration.edge.test_ocpp201_commands import Answering, report_item
from tests.support.operators import PASSWORD, add_operator, cheap_passwords

pytestmark = pytest.mark.sqlite_only(
    reason="the console's forms and the answers it shows for commands relayed to a station: nothing of them is stored"
)

# The words of `station_commands`' refusal, which the API answers 409 with.
UPSTREAM_OWNS = "owns its configuration, local list, reservations and data transfers"


BRUSSELS = ZoneInfo("Europe/Brussels")  # the console's default zone, the test company's


async def _signed_in(served: Served, email: str, role: str) -> httpx.AsyncClient:  # noqa: F811
    now = served.context.clock.now()
    passwords = cheap_passwords()
    await add_operator(
        served.context.store.transaction, passwords, now, company_id=served.tenant.company_id, email=email, role=role
    )
    client = httpx.AsyncClient(base_url=served.http_url, headers={"Origin": served.http_url}, timeout=10)
    signed = await client.post("/console/login", data={"email": email, "password": PASSWORD})
    assert signed.status_code == 303, signed.text
    return client


@pytest.fixture
async def admin(served: Served) -> AsyncIterator[httpx.AsyncClient]:  # noqa: F811
    client = await _signed_in(served, "admin@acme.test", "admin")
    yield client
    await client.aclose()


async def send(client: httpx.AsyncClient, data: dict[str, str]) -> httpx.Response:
    """A command posted from the station page as htmx posts it, with the page's CSRF token."""
    page = (await client.get("/console/stations/CS-1")).text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token
    return await client.post(
        "/console/stations/CS-1/commands",
        data={**data, "csrf_token": token.group(1)},
        headers={"HX-Request": "true"},
    )


def text_of(html: str) -> str:
    """The words of `html` as a reader sees them: tags dropped, spaces collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def in_an_hour() -> datetime:
    return (datetime.now(UTC) + timedelta(hours=1)).replace(second=0, microsecond=0)


def typed(instant: datetime) -> str:
    """A date-time field's text, as the reader types it: in the reader's zone."""
    return f"{instant.astimezone(BRUSSELS):%Y-%m-%dT%H:%M}"


def reservation(**fields: str) -> dict[str, str]:
    return {
        "command": "reserve",
        "region": "answer-reserve",
        "charge_point": "CS-1",
        "connector": "2",
        "id_tag": "TAG1",
        "expires": typed(in_an_hour()),
        "reservation_id": "7",
        **fields,
    }


async def test_a_reservation_reaches_the_station_and_its_answer_is_shown(
    admin: httpx.AsyncClient,
    station: SimulatedStation,  # noqa: F811
) -> None:
    expires = in_an_hour()
    response = await send(admin, reservation(expires=typed(expires), parent_id_tag="GROUP"))
    assert response.status_code == 200
    assert "Reserve (ReserveNow) to connector 2 of charge point CS-1: the station answered Accepted" in text_of(
        response.text
    )
    assert station.received_calls == [
        (
            "ReserveNow",
            {
                "connectorId": 2,
                "expiryDate": f"{expires:%Y-%m-%dT%H:%M}:00.000Z",
                "idTag": "TAG1",
                "reservationId": 7,
                "parentIdTag": "GROUP",
            },
        )
    ]


async def test_cancelling_a_reservation_shows_the_stations_refusal_as_its_answer(
    admin: httpx.AsyncClient,
    station: SimulatedStation,  # noqa: F811
) -> None:
    station.answers["CancelReservation"] = lambda _: {"status": "Rejected"}
    response = await send(admin, {"command": "cancel-reservation", "region": "answer-cancel", "reservation_id": "7"})
    assert response.status_code == 200
    assert "Cancel reservation (CancelReservation) to station CS-1: the station answered Rejected" in text_of(
        response.text
    )
    assert station.received_calls == [("CancelReservation", {"reservationId": 7})]


async def test_the_sites_local_list_is_sent_in_full_or_as_a_difference_with_the_version_typed(
    served: Served,  # noqa: F811
    admin: httpx.AsyncClient,
    station: SimulatedStation,  # noqa: F811
) -> None:
    async with served.context.store.transaction() as session:
        for id_tag, status in (("TAG-A", "Accepted"), ("TAG-B", "Blocked")):
            await localauth.add_entry(
                session,
                OPERATOR,
                site_id=served.tenant.site_id,
                id_tag=id_tag,
                status=status,
                now=served.context.clock.now(),
            )
    for version, update in (("4", "Full"), ("5", "Differential")):
        data = {"command": "send-local-list", "region": "answer-local-list", "list_version": version}
        response = await send(admin, {**data, "update_type": update})
        assert response.status_code == 200 and "the station answered Accepted" in text_of(response.text)
    entries = [
        {"idTag": "TAG-A", "idTagInfo": {"status": "Accepted"}},
        {"idTag": "TAG-B", "idTagInfo": {"status": "Blocked"}},
    ]
    assert station.received_calls == [
        ("SendLocalList", {"listVersion": 4, "updateType": "Full", "localAuthorizationList": entries}),
        ("SendLocalList", {"listVersion": 5, "updateType": "Differential", "localAuthorizationList": entries}),
    ]


async def test_the_local_list_version_is_the_stations_answer(
    admin: httpx.AsyncClient,
    station: SimulatedStation,  # noqa: F811
) -> None:
    station.answers["GetLocalListVersion"] = lambda _: {"listVersion": 4}
    response = await send(admin, {"command": "local-list-version", "region": "answer-list-version"})
    assert response.status_code == 200
    assert "the station has local list version 4" in text_of(response.text)
    station.answers["GetLocalListVersion"] = lambda _: {"listVersion": -1}
    unsupported = await send(admin, {"command": "local-list-version", "region": "answer-list-version"})
    assert "it has no local list support" in text_of(unsupported.text)


async def test_a_data_transfer_shows_the_stations_status_and_its_data_escaped(
    admin: httpx.AsyncClient,
    station: SimulatedStation,  # noqa: F811
) -> None:
    station.answers["DataTransfer"] = lambda _: {"status": "Accepted", "data": "<b>pong</b>"}
    data = {"command": "data-transfer", "region": "answer-data-transfer", "vendor_id": "com.example"}
    response = await send(admin, {**data, "message_id": "Ping", "data": "hello"})
    assert response.status_code == 200
    assert "the station answered Accepted, with data:" in text_of(response.text)
    assert "<code>&lt;b&gt;pong&lt;/b&gt;</code>" in response.text
    bare = await send(admin, data)  # the message id and the data are optional, and left out when blank
    assert "the station answered Accepted" in text_of(bare.text)
    assert station.received_calls == [
        ("DataTransfer", {"vendorId": "com.example", "messageId": "Ping", "data": "hello"}),
        ("DataTransfer", {"vendorId": "com.example"}),
    ]


async def test_a_callerror_to_a_data_transfer_is_shown_with_its_code(
    admin: httpx.AsyncClient,
    station: SimulatedStation,  # noqa: F811
) -> None:
    def refuse(_: object) -> dict[str, str]:
        raise AnswerWithError("NotImplemented", "no vendor messages here")

    station.answers["DataTransfer"] = refuse
    data = {"command": "data-transfer", "region": "answer-data-transfer", "vendor_id": "com.example"}
    response = await send(admin, data)
    assert response.status_code == 502
    assert "the station answered with CALLERROR NotImplemented: no vendor messages here" in text_of(response.text)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (reservation(expires="2020-01-01T00:00"), "must be in the future"),
        (reservation(expires=""), "say when the reservation expires"),
        (reservation(id_tag=""), "type the idTag the connector is reserved for"),
        (reservation(id_tag="T" * 21), "must be 1 to 20 characters"),
        (reservation(parent_id_tag="P" * 21), "must be 1 to 20 characters"),
        (reservation(reservation_id="seven"), "is not a whole number"),
        (reservation(reservation_id=""), "type the reservation"),
        ({"command": "cancel-reservation", "reservation_id": "-1"}, "must be 0 to 2147483647"),
        ({"command": "send-local-list", "list_version": "0", "update_type": "Full"}, "must be 1 to 2147483647"),
        ({"command": "send-local-list", "list_version": "", "update_type": "Full"}, "type the version"),
        (
            {"command": "send-local-list", "list_version": "1", "update_type": "Some"},
            "choose one of Full, Differential",
        ),
        ({"command": "data-transfer", "vendor_id": ""}, "type the vendor"),
        ({"command": "data-transfer", "vendor_id": "v" * 256}, "must be at most 255 characters"),
        ({"command": "data-transfer", "vendor_id": "v", "message_id": "m" * 51}, "must be at most 50 characters"),
        ({"command": "data-transfer", "vendor_id": "v", "data": "d" * 10_001}, "must be at most 10000 characters"),
    ],
)
async def test_a_bad_value_is_422_names_the_problem_and_is_not_sent(
    admin: httpx.AsyncClient,
    station: SimulatedStation,  # noqa: F811
    data: dict[str, str],
    problem: str,
) -> None:
    response = await send(admin, data)
    assert response.status_code == 422, response.text
    assert "not sent" in text_of(response.text) and problem in text_of(response.text)
    assert station.received_calls == []


async def test_behind_an_upstream_the_forms_are_off_and_a_post_is_refused_as_the_api_refuses_it(
    served: Served,  # noqa: F811
    admin: httpx.AsyncClient,
    station: SimulatedStation,  # noqa: F811
) -> None:
    await served.set_upstream("ws://127.0.0.1:9/ocpp")
    page = (await admin.get("/console/stations/CS-1")).text
    for button, reason in (
        ('value="reserve"', "reservations-off"),
        ('value="cancel-reservation" class="secondary"', "reservations-off"),
        ('value="send-local-list"', "local-list-off"),
        ('value="local-list-version" class="secondary"', "local-list-off"),
        ('value="data-transfer"', "data-transfer-off"),
    ):
        assert f'{button} disabled aria-describedby="{reason}"' in page
    for data in (
        reservation(),
        {"command": "cancel-reservation", "reservation_id": "7"},
        {"command": "send-local-list", "list_version": "1", "update_type": "Differential"},
        {"command": "local-list-version"},
        {"command": "data-transfer", "vendor_id": "com.example"},
    ):
        refused = await send(admin, data)
        assert refused.status_code == 409 and UPSTREAM_OWNS in text_of(refused.text), data
    assert station.received_calls == []


async def test_an_offline_station_has_its_forms_off_and_a_post_says_it_is_not_connected(
    admin: httpx.AsyncClient,
) -> None:
    page = (await admin.get("/console/stations/CS-1")).text
    assert 'value="reserve" disabled aria-describedby="reservations-off"' in page
    assert 'value="data-transfer" disabled aria-describedby="data-transfer-off"' in page
    for data in (reservation(), {"command": "local-list-version"}, {"command": "data-transfer", "vendor_id": "v"}):
        response = await send(admin, data)
        assert response.status_code == 503, data
        assert "not sent" in text_of(response.text) and "is not connected" in text_of(response.text)


async def test_a_viewer_gets_no_forms_and_a_post_is_403(
    served: Served,  # noqa: F811
    station: SimulatedStation,  # noqa: F811
) -> None:
    viewer = await _signed_in(served, "viewer@acme.test", "viewer")
    try:
        page = (await viewer.get("/console/stations/CS-1")).text
        assert 'value="reserve"' not in page and 'value="data-transfer"' not in page
        assert "(ReserveNow, CancelReservation), which your role does not send" in page
        for data in (reservation(), {"command": "data-transfer", "vendor_id": "v"}):
            refused = await send(viewer, data)
            assert refused.status_code == 403
    finally:
        await viewer.aclose()
    assert station.received_calls == []


async def test_a_plain_form_post_shows_the_page_with_the_answer_beside_its_form(
    admin: httpx.AsyncClient,
    station: SimulatedStation,  # noqa: F811
) -> None:
    page = (await admin.get("/console/stations/CS-1")).text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token
    data = {"command": "local-list-version", "region": "answer-list-version", "csrf_token": token.group(1)}
    response = await admin.post("/console/stations/CS-1/commands", data=data)
    assert response.status_code == 200 and "<h1>Station CS-1</h1>" in response.text
    before, region = response.text.split('id="answer-list-version"', 1)
    assert "the station answered 0: its local list is empty" in text_of(region.split("</form>", 1)[0])
    assert "local list is empty" not in before


async def test_a_2_0_1_stations_page_reads_variables_and_shows_its_device_model_report(
    served: Served,  # noqa: F811
    admin: httpx.AsyncClient,
) -> None:
    async with station_201(served, kind=Answering) as (point, _):
        await point.call(call.BootNotification(charging_station={"vendorName": "V", "model": "M"}, reason="PowerUp"))
        await served.edge.message_log.run_once()  # the store shows it connected over 2.0.1 now
        page = text_of((await admin.get("/console/stations/CS-1")).text)
        assert "Read a variable" in page and "Read configuration" not in page
        assert "DiagnosticsStatusNotification" not in page  # a trigger 2.0.1 does not have is not offered
        variable = {"component": "OCPPCommCtrlr", "variable": "HeartbeatInterval"}
        read = await send(admin, {"command": "get-variables", "region": "answer-config", **variable})
        assert "OCPPCommCtrlr.HeartbeatInterval" in text_of(read.text) and "300" in text_of(read.text)
        asked = await send(
            admin, {"command": "get-base-report", "region": "answer-report", "report_base": "FullInventory"}
        )
        assert "answered Accepted" in text_of(asked.text)
        [(_, request)] = [(action, payload) for action, payload in point.received if action == "GetBaseReport"]
        item = report_item("EVSE", "Power", "22000")
        await point.call(
            call.NotifyReport(
                request_id=request["requestId"], generated_at=at(2), seq_no=0, tbc=False, report_data=[item]
            )
        )
        page_html = (await admin.get("/console/stations/CS-1")).text
        assert f"Report {request['requestId']}, 1 part" in text_of(page_html)
        assert "<code>Power</code>" in page_html and "<code>22000</code>" in page_html
