"""Commands to a station as a whole over the API, the same use cases as `chargenet admin station VERB`, with a
simulated station on a real WebSocket."""

from __future__ import annotations

import httpx
import pytest

from chargenet.services.callers import OPERATOR
from chargenet.simulators.station import AnswerWithError, SimulatedStation
from tests.factories import partner_token
from tests.integration.edge.conftest import Served, served, station  # noqa: F401  (fixtures)
from tests.integration.edge.test_sessions_api import api, rival  # noqa: F401  (fixtures)

pytestmark = pytest.mark.sqlite_only(reason="commands relayed to a station over the API: nothing of them is stored")


async def test_reset_of_the_station_is_its_answer(api: httpx.AsyncClient, station: SimulatedStation) -> None:  # noqa: F811
    response = await api.post("/stations/CS-1/reset", json={"type": "Soft"})
    assert (response.status_code, response.json()) == (200, {"status": "Accepted"})
    assert station.received_calls == [("Reset", {"type": "Soft"})]


async def test_availability_of_the_station_is_sent_to_connector_0(
    api: httpx.AsyncClient,  # noqa: F811
    station: SimulatedStation,  # noqa: F811
) -> None:
    response = await api.post("/stations/CS-1/availability", json={"type": "Inoperative"})
    assert (response.status_code, response.json()) == (200, {"status": "Accepted"})
    assert station.received_calls == [("ChangeAvailability", {"connectorId": 0, "type": "Inoperative"})]


async def test_trigger_without_a_connector_asks_the_station(api: httpx.AsyncClient, station: SimulatedStation) -> None:  # noqa: F811
    response = await api.post("/stations/CS-1/trigger", json={"requestedMessage": "Heartbeat"})
    assert (response.status_code, response.json()) == (200, {"status": "Accepted"})
    assert station.received_calls == [("TriggerMessage", {"requestedMessage": "Heartbeat"})]


async def test_get_configuration_answers_the_stations_keys(api: httpx.AsyncClient, station: SimulatedStation) -> None:  # noqa: F811
    response = await api.post("/stations/CS-1/get-configuration", json={"key": ["HeartbeatInterval"]})
    assert response.status_code == 200
    assert response.json() == {"configurationKey": [{"key": "HeartbeatInterval", "readonly": False, "value": "300"}]}
    assert station.received_calls == [("GetConfiguration", {"key": ["HeartbeatInterval"]})]


async def test_change_configuration_clear_cache_and_local_list_version_reach_the_station(
    api: httpx.AsyncClient,  # noqa: F811
    station: SimulatedStation,  # noqa: F811
) -> None:
    change = await api.post("/stations/CS-1/change-configuration", json={"key": "HeartbeatInterval", "value": "60"})
    clear = await api.post("/stations/CS-1/clear-cache")
    version = await api.post("/stations/CS-1/local-list-version")
    assert [change.json(), clear.json(), version.json()] == [
        {"status": "Accepted"},
        {"status": "Accepted"},
        {"listVersion": 0},
    ]
    assert [action for action, _ in station.received_calls] == [
        "ChangeConfiguration",
        "ClearCache",
        "GetLocalListVersion",
    ]


EMAID = "NL-TNM-C12345678-X-EXTRA-LONG-TOKEN1"  # 36 characters: a 2.0.1 idToken, too long for 1.6


async def test_send_local_list_sends_the_sites_whole_list_but_the_tags_a_16_station_cannot_take(
    served: Served,  # noqa: F811
    api: httpx.AsyncClient,  # noqa: F811
    station: SimulatedStation,  # noqa: F811
) -> None:
    writer = await partner_token(served.context, served.tenant.company_id, ["sites:write"])
    entries = f"/sites/{served.tenant.site_id}/local-authorization-list"
    headers = {"Authorization": f"Bearer {writer}"}
    put = await api.put(f"{entries}/{EMAID}", json={"idTokenType": "eMAID"}, headers=headers)
    assert (put.status_code, put.json()["idTokenType"]) == (200, "eMAID")
    assert (await api.put(f"{entries}/CARD-1", json={}, headers=headers)).json()["idTokenType"] == "ISO14443"
    assert (await api.put(f"{entries}/{EMAID}X", json={}, headers=headers)).status_code == 422
    assert (await api.put(f"{entries}/CARD-2", json={"idTokenType": "Magstripe"}, headers=headers)).status_code == 422

    response = await api.post("/stations/CS-1/send-local-list", json={"listVersion": 3})
    assert (response.status_code, response.json()) == (200, {"status": "Accepted", "skippedIdTags": [EMAID]})
    ((action, payload),) = station.received_calls
    assert (action, payload["listVersion"], payload["updateType"]) == ("SendLocalList", 3, "Full")
    assert payload["localAuthorizationList"] == [{"idTag": "CARD-1", "idTagInfo": {"status": "Accepted"}}]


async def test_send_local_list_as_a_difference_adds_the_sites_tags_to_the_stations(
    api: httpx.AsyncClient,  # noqa: F811
    station: SimulatedStation,  # noqa: F811
) -> None:
    response = await api.post("/stations/CS-1/send-local-list", json={"listVersion": 4, "updateType": "Differential"})
    assert (response.status_code, response.json()) == (200, {"status": "Accepted"})
    assert station.received_calls == [
        ("SendLocalList", {"listVersion": 4, "updateType": "Differential", "localAuthorizationList": []})
    ]


async def test_reserve_and_cancel_a_reservation(api: httpx.AsyncClient, station: SimulatedStation) -> None:  # noqa: F811
    reserve = await api.post(
        "/stations/CS-1/reserve",
        json={"connectorId": 2, "idTag": "TAG1", "expiryDate": "2027-01-01T18:00:00+01:00", "reservationId": 7},
    )
    cancel = await api.post("/stations/CS-1/cancel-reservation", json={"reservationId": 7})
    assert (reserve.status_code, reserve.json(), cancel.json()) == (200, {"status": "Accepted"}, {"status": "Accepted"})
    assert station.received_calls[0] == (
        "ReserveNow",
        {"connectorId": 2, "expiryDate": "2027-01-01T18:00:00.000+01:00", "idTag": "TAG1", "reservationId": 7},
    )
    assert station.received_calls[1] == ("CancelReservation", {"reservationId": 7})


async def test_data_transfer_answers_the_stations_status(api: httpx.AsyncClient, station: SimulatedStation) -> None:  # noqa: F811
    response = await api.post("/stations/CS-1/data-transfer", json={"vendorId": "com.example", "messageId": "ping"})
    assert (response.status_code, response.json()) == (200, {"status": "UnknownVendorId"})
    assert station.received_calls == [("DataTransfer", {"vendorId": "com.example", "messageId": "ping"})]


async def test_central_system_commands_on_a_site_with_an_upstream_are_409(
    served: Served,  # noqa: F811
    api: httpx.AsyncClient,  # noqa: F811
    station: SimulatedStation,  # noqa: F811
) -> None:
    await served.set_upstream("ws://127.0.0.1:9/ocpp")
    response = await api.post("/stations/CS-1/clear-cache")
    assert response.status_code == 409
    assert response.headers["content-type"] == "application/problem+json"
    assert station.received_calls == []


async def test_a_station_not_connected_is_503(api: httpx.AsyncClient) -> None:  # noqa: F811
    response = await api.post("/stations/CS-1/reset", json={"type": "Hard"})
    assert response.status_code == 503


async def test_a_callerror_answer_is_502_with_the_stations_code(
    api: httpx.AsyncClient,  # noqa: F811
    station: SimulatedStation,  # noqa: F811
) -> None:
    def refuse(_: object) -> dict[str, str]:
        raise AnswerWithError("NotSupported", "no resets here")

    station.answers["Reset"] = refuse
    response = await api.post("/stations/CS-1/reset", json={"type": "Hard"})
    assert response.status_code == 502
    assert response.json()["stationErrorCode"] == "NotSupported"


async def test_a_caller_without_charge_points_write_is_403(served: Served, station: SimulatedStation) -> None:  # noqa: F811
    token = await partner_token(served.context, served.tenant.company_id, ["charge-points:read"])
    async with httpx.AsyncClient(base_url=f"{served.http_url}/api/v1", timeout=10) as client:
        response = await client.post(
            "/stations/CS-1/reset", json={"type": "Hard"}, headers={"Authorization": f"Bearer {token}"}
        )
    assert response.status_code == 403
    assert station.received_calls == []


async def test_another_companys_station_is_404_and_reaches_nothing(
    rival: httpx.AsyncClient,  # noqa: F811
    station: SimulatedStation,  # noqa: F811
) -> None:
    for verb, body in [("reset", {"type": "Hard"}), ("clear-cache", None), ("get-configuration", {})]:
        response = await rival.post(f"/stations/CS-1/{verb}", json=body)
        assert response.status_code == 404, verb
    assert station.received_calls == []


@pytest.mark.parametrize(
    ("verb", "body"),
    [
        ("reset", {"type": "Medium"}),
        ("availability", {"type": "Off"}),
        ("change-configuration", {"key": "", "value": "1"}),
        ("reserve", {"connectorId": 0, "idTag": "T", "expiryDate": "2027-01-01T18:00:00+01:00", "reservationId": 1}),
        ("reserve", {"connectorId": 1, "idTag": "T", "expiryDate": "2027-01-01T18:00:00", "reservationId": 1}),
        # An OCPP 1.6 station takes an idTag of 20 characters at most; a 2.0.1 one an idToken of 36.
        ("reserve", {"connectorId": 1, "idTag": "T" * 21, "expiryDate": "2027-01-01T18:00:00Z", "reservationId": 1}),
        ("cancel-reservation", {"reservationId": 2**40}),
        ("send-local-list", {"listVersion": "3"}),
        ("send-local-list", {"listVersion": 3, "updateType": "Partial"}),
    ],
)
async def test_a_bad_body_is_422_and_reaches_no_station(
    api: httpx.AsyncClient,  # noqa: F811
    station: SimulatedStation,  # noqa: F811
    verb: str,
    body: dict[str, object],
) -> None:
    response = await api.post(f"/stations/CS-1/{verb}", json=body)
    assert response.status_code == 422
    assert station.received_calls == []


async def test_a_data_transfer_the_document_allows_fits_one_frame_and_a_longer_one_is_refused(
    api: httpx.AsyncClient,  # noqa: F811
    station: SimulatedStation,  # noqa: F811
) -> None:
    # The longest the document allows, of the characters JSON writes longest (control characters, six bytes each):
    # one 64 KiB frame still holds it. Over the document's bound it is 422, before the station is asked.
    longest = {"vendorId": "v" * 255, "messageId": "\x01" * 50, "data": "\x01" * 10_000}
    answered = await api.post("/stations/CS-1/data-transfer", json=longest)
    assert (answered.status_code, answered.json()) == (200, {"status": "UnknownVendorId"})
    refused = await api.post("/stations/CS-1/data-transfer", json={"vendorId": "v", "data": "d" * 70_000})
    assert (refused.status_code, refused.json()["field"]) == (422, "data")
    assert [action for action, _ in station.received_calls] == ["DataTransfer"]


async def test_a_command_over_the_frame_limit_is_refused_before_the_station_is_asked(
    served: Served,  # noqa: F811
    station: SimulatedStation,  # noqa: F811
) -> None:
    from chargenet.edge.ocpp16.frames import FrameLimits
    from chargenet.errors import InvalidInput
    from chargenet.services import station_commands

    with pytest.raises(InvalidInput, match="does not fit in one OCPP frame"):
        await station_commands.central_command(
            served.context.store.read,
            served.context.stations,
            OPERATOR,
            station_id="CS-1",
            action="DataTransfer",
            payload={"vendorId": "v", "data": "d" * 2000},
            limits=FrameLimits(max_frame_bytes=1024),
        )
    assert station.received_calls == []
