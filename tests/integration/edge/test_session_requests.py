"""A session followed over the API from its request to its stop (decisions.md §5 "Partner API"), with a simulated
station on a real WebSocket: the request, the station's answer, the transaction that followed, its energy and
its meter samples."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, update

from chargenet.services import companies
from chargenet.services.callers import OPERATOR
from chargenet.services.session_requests import SessionRequestRetention
from chargenet.simulators.station import SimulatedStation
from chargenet.store.models import SessionRequest
from tests.factories import partner_token
from tests.integration.edge.conftest import Served
from tests.integration.edge.test_charging import add_tag

START = {"chargePointId": "CS-1", "connectorId": 1, "idTag": "TAG1"}


@pytest.fixture
async def api(served: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=f"{served.http_url}/api/v1", headers={"Authorization": f"Bearer {served.token}"}, timeout=10
    ) as client:
        yield client


def at(served: Served, minutes_ago: int) -> str:
    return (served.context.clock.now() - timedelta(minutes=minutes_ago)).isoformat()


async def test_a_session_is_followed_from_its_request_to_its_stop_with_its_energy_and_samples(
    served: Served, api: httpx.AsyncClient, station: SimulatedStation
) -> None:
    await add_tag(served, "TAG1")
    started = await api.post("/sessions", json=START)
    assert started.status_code == 202
    request_id = started.json()["requestId"]
    assert started.json() == {"status": "Accepted", "requestId": request_id}
    answered = (await api.get(f"/sessions/requests/{request_id}")).json()
    assert (answered["status"], "transactionId" in answered) == ("Accepted", False)

    transaction_id = (await station.start(1, "TAG1", 1000, timestamp=at(served, 5)))["transactionId"]
    request = (await api.get(f"/sessions/requests/{request_id}")).json()
    assert (request["status"], request["transactionId"]) == ("Accepted", transaction_id)
    [event] = await served.events("StartTransaction")
    assert event["payload"]["requestId"] == request_id

    await station.meter_values(1, transaction_id, 2000, timestamp=at(served, 4), power_w=7200)
    await station.meter_values(1, transaction_id, 3000, timestamp=at(served, 3))
    await station.stop(transaction_id, 4500)
    await served.edge.message_log.run_once()  # the samples are written with the log's next batch
    transaction = (await api.get(f"/transactions/{transaction_id}")).json()
    assert (transaction["active"], transaction["meterStop"], transaction["energy"]) == (False, 4.5, 3.5)
    first = (await api.get(f"/transactions/{transaction_id}/samples", params={"limit": 1})).json()
    rest = (await api.get(f"/transactions/{transaction_id}/samples", params={"cursor": first["next"]})).json()
    samples = first["items"] + rest["items"]
    assert [(s["energy"], s["delivered"], s.get("power")) for s in samples] == [(2.0, 1.0, 7200.0), (3.0, 2.0, None)]
    assert rest["next"] is None

    # A request is followed by one transaction: the next start on that connector was nobody's request.
    await station.start(1, "TAG1", 4500)
    assert "requestId" not in (await served.events("StartTransaction"))[-1]["payload"]


async def stored_requests(served: Served) -> int:
    async with served.context.store.read() as session:
        return int(await session.scalar(select(func.count()).select_from(SessionRequest)) or 0)


async def test_refused_starts_name_their_request_and_bad_input_stores_none(
    served: Served, api: httpx.AsyncClient
) -> None:
    not_connected = await api.post("/sessions", json=START)
    assert not_connected.status_code == 503
    request_id = not_connected.json()["requestId"]
    assert (await api.get(f"/sessions/requests/{request_id}")).json()["status"] == "NotConnected"

    station = served.station()
    await station.connect()
    await station.boot()
    try:
        station.answers["RemoteStartTransaction"] = lambda _: {"status": "Rejected"}
        rejected = await api.post("/sessions", json=START)
        assert (rejected.status_code, rejected.headers["content-type"]) == (409, "application/problem+json")
        status = (await api.get(f"/sessions/requests/{rejected.json()['requestId']}")).json()["status"]
        assert status == "Rejected"
    finally:
        await station.close()

    stored = await stored_requests(served)
    too_long_for_1_6 = {**START, "idTag": "T" * 21}
    for body in (
        {**START, "chargePointId": "NOPE"},
        {**START, "connectorId": 0},
        {**START, "idTag": ""},
        too_long_for_1_6,
    ):
        assert (await api.post("/sessions", json=body)).status_code in (404, 422)
    assert await stored_requests(served) == stored


async def test_a_request_of_another_company_or_older_than_7_days_is_404(served: Served, api: httpx.AsyncClient) -> None:
    request_id = (await api.post("/sessions", json=START)).json()["requestId"]
    async with served.context.store.transaction() as session:
        rival = await companies.create_company(session, OPERATOR, name="Rival", now=served.context.clock.now())
    rival_token = await partner_token(served.context, rival.id, ["sessions:write"])
    rival_headers = {"Authorization": f"Bearer {rival_token}"}
    assert (await api.get(f"/sessions/requests/{request_id}", headers=rival_headers)).status_code == 404
    assert (await api.get(f"/sessions/requests/{request_id}")).status_code == 200

    async with served.context.store.transaction() as session:
        old = served.context.clock.now() - timedelta(days=7, minutes=1)
        await session.execute(update(SessionRequest).values(requested_at=old))
    refused: list[Any] = [
        await api.get(f"/sessions/requests/{request_id}"),
        await api.get("/sessions/requests/sreq_nosuchrequest"),
    ]
    for response in refused:
        assert (response.status_code, response.headers["content-type"]) == (404, "application/problem+json")
    assert (await api.get(f"/sessions/requests/{'x' * 41}")).status_code == 422
    await SessionRequestRetention(served.context.store, served.context.clock).run_once()
    assert await stored_requests(served) == 0
