"""Sessions and station commands over the API, with a simulated station on a real WebSocket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from chargenet.services import sites
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import encode_cursor
from chargenet.simulators.station import AnswerWithError, SimulatedStation
from chargenet.store.models import Meter
from tests.factories import partner_token
from tests.integration.edge.conftest import Served
from tests.integration.edge.test_charging import add_tag

pytestmark = pytest.mark.sqlite_only(
    reason="the API's answers to session requests and commands; the store only holds what they read"
)


@pytest.fixture
async def api(served: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=f"{served.http_url}/api/v1", headers={"Authorization": f"Bearer {served.token}"}, timeout=10
    ) as client:
        yield client


async def test_start_session_is_202_once_the_station_accepted(
    api: httpx.AsyncClient, station: SimulatedStation
) -> None:
    response = await api.post("/sessions", json={"chargePointId": "CS-1", "connectorId": 1, "idTag": "TAG1"})
    assert (response.status_code, response.json()["status"]) == (202, "Accepted")
    assert station.received_calls == [("RemoteStartTransaction", {"connectorId": 1, "idTag": "TAG1"})]


async def test_start_session_rejected_by_the_station_is_409(api: httpx.AsyncClient, station: SimulatedStation) -> None:
    station.answers["RemoteStartTransaction"] = lambda _: {"status": "Rejected"}
    response = await api.post("/sessions", json={"chargePointId": "CS-1", "connectorId": 1, "idTag": "TAG1"})
    assert response.status_code == 409
    assert response.headers["content-type"] == "application/problem+json"


async def test_start_session_on_a_station_not_connected_is_503(api: httpx.AsyncClient) -> None:
    response = await api.post("/sessions", json={"chargePointId": "CS-1", "connectorId": 1, "idTag": "TAG1"})
    assert response.status_code == 503


async def test_start_session_the_station_never_answers_is_504(
    api: httpx.AsyncClient, station: SimulatedStation
) -> None:
    async def never(_: object) -> dict[str, str]:
        await asyncio.Event().wait()  # the station stays silent until the connection goes away
        return {"status": "Accepted"}

    station.answers["RemoteStartTransaction"] = never
    response = await api.post("/sessions", json={"chargePointId": "CS-1", "connectorId": 1, "idTag": "TAG1"})
    assert response.status_code == 504


def call_error(code: str, description: str) -> Callable[[object], dict[str, str]]:
    def answer(_: object) -> dict[str, str]:
        raise AnswerWithError(code, description)

    return answer


async def test_start_session_the_station_answers_with_a_call_error_is_502_with_its_code(
    api: httpx.AsyncClient, station: SimulatedStation
) -> None:
    station.answers["RemoteStartTransaction"] = call_error("InternalError", "relay stuck")
    response = await api.post("/sessions", json={"chargePointId": "CS-1", "connectorId": 1, "idTag": "TAG1"})
    assert response.status_code == 502
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert (problem["stationErrorCode"], problem["stationErrorDescription"]) == ("InternalError", "relay stuck")


async def test_command_the_station_answers_with_a_call_error_is_502_with_its_code_and_description(
    api: httpx.AsyncClient, station: SimulatedStation
) -> None:
    station.answers["Reset"] = call_error("NotSupported", "no soft reset on this model")
    response = await api.post("/charge-points/CS-1/reset", json={"type": "Soft"})
    assert response.status_code == 502
    problem = response.json()
    assert problem["stationErrorCode"] == "NotSupported"
    assert problem["stationErrorDescription"] == "no soft reset on this model"
    assert "NotSupported" in problem["detail"]


async def test_command_answer_that_breaks_its_schema_is_502(api: httpx.AsyncClient, station: SimulatedStation) -> None:
    station.answers["Reset"] = lambda _: {"status": "Maybe"}
    response = await api.post("/charge-points/CS-1/reset", json={"type": "Soft"})
    assert response.status_code == 502 and "stationErrorCode" not in response.json()


async def test_start_session_on_an_unknown_charge_point_is_404(api: httpx.AsyncClient) -> None:
    response = await api.post("/sessions", json={"chargePointId": "NOPE", "connectorId": 1, "idTag": "TAG1"})
    assert response.status_code == 404


async def test_start_session_with_a_bad_body_is_422(api: httpx.AsyncClient) -> None:
    response = await api.post("/sessions", json={"chargePointId": "CS-1", "connectorId": "1", "idTag": "TAG1"})
    assert response.status_code == 422


async def test_stop_session_goes_to_the_transactions_own_station(
    served: Served, api: httpx.AsyncClient, station: SimulatedStation
) -> None:
    await add_tag(served, "TAG1")
    started = await station.start(1, "TAG1")
    response = await api.post(f"/sessions/{started['transactionId']}/stop")
    assert response.status_code == 202
    assert station.received_calls[-1] == ("RemoteStopTransaction", {"transactionId": started["transactionId"]})


async def test_stop_session_rejected_by_the_station_is_409(
    served: Served, api: httpx.AsyncClient, station: SimulatedStation
) -> None:
    await add_tag(served, "TAG1")
    started = await station.start(1, "TAG1")
    station.answers["RemoteStopTransaction"] = lambda _: {"status": "Rejected"}
    response = await api.post(f"/sessions/{started['transactionId']}/stop")
    assert response.status_code == 409
    assert response.headers["content-type"] == "application/problem+json"
    assert "Rejected" in response.json()["detail"]


async def test_stop_of_an_unknown_transaction_is_404(api: httpx.AsyncClient) -> None:
    assert (await api.post("/sessions/999999/stop")).status_code == 404


async def test_transactions_list_pages_and_filters(
    served: Served, api: httpx.AsyncClient, station: SimulatedStation
) -> None:
    await add_tag(served, "TAG1")
    await add_tag(served, "TAG2")
    first = await station.start(1, "TAG1", 1000)
    await station.start(2, "TAG2", 0)
    await station.stop(first["transactionId"], 3500)
    page = (await api.get("/transactions", params={"limit": 1})).json()
    assert [t["transactionId"] for t in page["items"]] == [first["transactionId"]]
    assert page["items"][0]["meterStop"] == 3.5 and page["items"][0]["active"] is False
    rest = (await api.get("/transactions", params={"limit": 1, "cursor": page["next"]})).json()
    assert rest["items"][0]["idTag"] == "TAG2"
    active = (await api.get("/transactions", params={"active": "true"})).json()
    assert [t["idTag"] for t in active["items"]] == ["TAG2"] and active["next"] is None


@pytest.mark.parametrize("key", ["CS-1", "-1", "2147483648"])
async def test_transactions_cursor_of_no_transaction_id_is_404(api: httpx.AsyncClient, key: str) -> None:
    # Base64url of a key no page of this list gives (not an id, or beyond the 32-bit ids): it names no page.
    response = await api.get("/transactions", params={"cursor": encode_cursor(key)})
    assert response.status_code == 404


async def test_commands_return_the_stations_answer(api: httpx.AsyncClient, station: SimulatedStation) -> None:
    assert (await api.post("/charge-points/CS-1/reset", json={"type": "Soft"})).json() == {"status": "Accepted"}
    assert (await api.post("/charge-points/CS-1/unlock", json={"connectorId": 1})).json() == {"status": "Unlocked"}
    body = {"connectorId": 0, "type": "Inoperative"}
    assert (await api.post("/charge-points/CS-1/availability", json=body)).json() == {"status": "Accepted"}
    body2 = {"requestedMessage": "StatusNotification", "connectorId": 1}
    assert (await api.post("/charge-points/CS-1/trigger", json=body2)).json() == {"status": "Accepted"}
    assert [a for a, _ in station.received_calls] == [
        "Reset",
        "UnlockConnector",
        "ChangeAvailability",
        "TriggerMessage",
    ]


async def test_availability_of_connector_zero_of_a_single_charge_point_station_is_sent_as_zero(
    api: httpx.AsyncClient, station: SimulatedStation
) -> None:
    body = {"connectorId": 0, "type": "Inoperative"}
    assert (await api.post("/charge-points/CS-1/availability", json=body)).json() == {"status": "Accepted"}
    assert station.received_calls == [("ChangeAvailability", {"connectorId": 0, "type": "Inoperative"})]


async def test_availability_of_a_charge_point_among_several_goes_to_each_of_its_connectors_never_to_zero(
    api: httpx.AsyncClient, duo: SimulatedStation
) -> None:
    duo.answers["ChangeAvailability"] = lambda p: {"status": "Scheduled" if p["connectorId"] == 4 else "Accepted"}
    response = await api.post("/charge-points/DUO-2/availability", json={"connectorId": 0, "type": "Inoperative"})
    assert response.json() == {
        "status": "Scheduled",
        "connectors": [{"connectorId": 1, "status": "Accepted"}, {"connectorId": 2, "status": "Scheduled"}],
    }
    assert duo.received_calls == [
        ("ChangeAvailability", {"connectorId": 3, "type": "Inoperative"}),
        ("ChangeAvailability", {"connectorId": 4, "type": "Inoperative"}),
    ]


async def test_availability_of_one_connector_of_a_charge_point_among_several_names_its_ocpp_id(
    api: httpx.AsyncClient, duo: SimulatedStation
) -> None:
    response = await api.post("/charge-points/DUO-2/availability", json={"connectorId": 1, "type": "Operative"})
    assert response.json() == {"status": "Accepted"}
    assert duo.received_calls == [("ChangeAvailability", {"connectorId": 3, "type": "Operative"})]


async def test_caller_outside_the_site_sees_404(
    served: Served, api: httpx.AsyncClient, station: SimulatedStation
) -> None:
    async with served.context.store.transaction() as session:
        other = await sites.create_site(
            session,
            OPERATOR,
            served.context.keys.credential_cipher(),
            company_id=served.tenant.company_id,
            name="Elsewhere",
            now=served.context.clock.now(),
        )
    token = await partner_token(served.context, served.tenant.company_id, ["sessions:write"], site_id=other.id)
    response = await api.post(
        "/sessions",
        json={"chargePointId": "CS-1", "connectorId": 1, "idTag": "TAG1"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 404
    assert station.received_calls == []


@pytest.fixture
async def rival(served: Served) -> AsyncIterator[httpx.AsyncClient]:
    """The API as another company's partner, with every scope of the edge over that company."""
    from chargenet.services import companies

    async with served.context.store.transaction() as session:
        company = await companies.create_company(
            session, OPERATOR, name="Rival Charging", now=served.context.clock.now()
        )
    token = await partner_token(
        served.context, company.id, ["sessions:write", "transactions:read", "charge-points:write"]
    )
    async with httpx.AsyncClient(
        base_url=f"{served.http_url}/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=10
    ) as client:
        yield client


async def test_stop_of_another_companys_transaction_is_404_and_reaches_no_station(
    served: Served, rival: httpx.AsyncClient, station: SimulatedStation
) -> None:
    await add_tag(served, "TAG1")
    started = await station.start(1, "TAG1")
    response = await rival.post(f"/sessions/{started['transactionId']}/stop")
    assert response.status_code == 404
    assert station.received_calls == []


COMMANDS = [
    ("reset", {"type": "Soft"}),
    ("unlock", {"connectorId": 1}),
    ("availability", {"connectorId": 0, "type": "Inoperative"}),
    ("trigger", {"requestedMessage": "StatusNotification", "connectorId": 1}),
]


@pytest.mark.parametrize(("command", "body"), COMMANDS)
async def test_command_on_another_companys_charge_point_is_404_and_reaches_no_station(
    rival: httpx.AsyncClient, station: SimulatedStation, command: str, body: dict[str, object]
) -> None:
    response = await rival.post(f"/charge-points/CS-1/{command}", json=body)
    assert response.status_code == 404
    assert station.received_calls == []


async def test_start_session_on_another_companys_charge_point_is_404(
    rival: httpx.AsyncClient, station: SimulatedStation
) -> None:
    response = await rival.post("/sessions", json={"chargePointId": "CS-1", "connectorId": 1, "idTag": "TAG1"})
    assert response.status_code == 404
    assert station.received_calls == []


async def test_transactions_of_another_company_are_not_listed_even_when_asked_for_by_their_ids(
    served: Served, rival: httpx.AsyncClient, station: SimulatedStation
) -> None:
    await add_tag(served, "TAG1")
    await station.start(1, "TAG1")
    # decisions.md: a list filtered by what the caller does not reach is empty, never 403 or 404.
    for params in ({}, {"siteId": served.tenant.site_id}, {"chargePointId": "CS-1"}):
        response = await rival.get("/transactions", params=params)
        assert (response.status_code, response.json()) == (200, {"items": [], "next": None})


@pytest.mark.parametrize(
    ("method", "path", "body", "scope"),
    [
        ("POST", "/sessions", {"chargePointId": "CS-1", "connectorId": 1, "idTag": "TAG1"}, "sessions:write"),
        ("POST", "/sessions/1/stop", None, "sessions:write"),
        ("GET", "/transactions", None, "transactions:read"),
        *[("POST", f"/charge-points/CS-1/{c}", b, "charge-points:write") for c, b in COMMANDS],
    ],
)
async def test_a_token_without_the_endpoints_scope_gets_403(
    served: Served,
    api: httpx.AsyncClient,
    station: SimulatedStation,
    method: str,
    path: str,
    body: dict[str, object] | None,
    scope: str,
) -> None:
    others = [s for s in ("sessions:write", "transactions:read", "charge-points:write") if s != scope]
    token = await partner_token(served.context, served.tenant.company_id, [*others, "charge-points:read"])
    response = await api.request(method, path, json=body, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 403
    assert f'scope="{scope}"' in response.headers["www-authenticate"]
    assert station.received_calls == []


async def test_without_a_token_the_api_answers_401_with_a_bare_bearer_challenge(
    served: Served, api: httpx.AsyncClient
) -> None:
    response = await api.get("/transactions", headers={"Authorization": ""})
    assert response.status_code == 401
    assert (
        response.headers["www-authenticate"].startswith("Bearer")
        and "error=" not in response.headers["www-authenticate"]
    )


async def open_meter_session(served: Served) -> int:
    """A meter on the tenant's station with one open detected session; returns its transaction id."""
    from chargenet.meters import records as meter_sessions
    from chargenet.services import meters

    now = served.context.clock.now()
    async with served.context.store.transaction() as session:
        meter = await meters.create_meter(
            session,
            OPERATOR,
            site_id=served.tenant.site_id,
            station_id=served.tenant.station_id,
            profile="sdm630",
            unit_id=1,
            tcp="127.0.0.1:1502",
            connector_id=2,
            now=now,
        )
        row = await session.get(Meter, meter.id)
        assert row is not None
        return await meter_sessions.start_session(
            session, served.context.outbox, meters.spec_of(row), meter_start_wh=1000, started_at=now, at=now
        )


async def test_meter_sessions_are_listed_with_ocpp_transactions(served: Served, api: httpx.AsyncClient) -> None:
    transaction_id = await open_meter_session(served)
    items = (await api.get("/transactions", params={"active": "true"})).json()["items"]
    [listed] = [i for i in items if i["transactionId"] == transaction_id]
    assert listed["source"] == "meter" and listed["meterStart"] == 1.0 and listed["connectorId"] == 2


async def test_stopping_a_meter_session_is_a_409_conflict(served: Served, api: httpx.AsyncClient) -> None:
    transaction_id = await open_meter_session(served)
    response = await api.post(f"/sessions/{transaction_id}/stop")
    assert response.status_code == 409
    assert response.headers["content-type"] == "application/problem+json"
    assert "meter" in response.json()["detail"]


@pytest.mark.both_stores(reason="the presence upsert differs between the stores")
async def test_station_presence_for_the_charge_point_status(served: Served, station: SimulatedStation) -> None:
    from chargenet.services import charge_points
    from chargenet.services.views import rendered

    await station.heartbeat()
    await served.edge.message_log.run_once()
    async with served.context.store.transaction() as session:
        presence = rendered(await charge_points.station_presence(session, served.edge, "CS-1"))
    assert presence["connection"] == "connected" and presence["lastHeartbeat"] is not None
