"""A 2.0.1 station that moves between two chargenet processes sharing one store (as two `chargenet serve` share
one PostgreSQL): it charges on the first, its connection drops, and it goes on on the second."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from ocpp.v201 import call

from chargenet.app import AppContext
from chargenet.store.models import LocalAuthEntry
from tests.integration.edge.conftest import Served, serve_chargenet
from tests.integration.edge.test_ocpp201 import T0, TOKEN, energy, station_201, transaction_event
from tests.integration.edge.test_ocpp201_commands import Answering


@pytest.fixture
async def other(tmp_path: Path, database_url: str) -> AsyncIterator[tuple[AppContext, int]]:
    """A second process on the same store and keys folder."""
    context, server, task, port = await serve_chargenet(tmp_path, database_url)
    assert context.edge is not None
    context.edge.command_timeout = timedelta(seconds=2)
    yield context, port
    server.should_exit = True
    await task
    await context.close()


async def test_a_transaction_begun_on_one_process_goes_on_and_ends_on_another(
    served: Served, other: tuple[AppContext, int]
) -> None:
    second, port = other
    assert second.edge is not None
    async with served.context.store.transaction() as session:
        site = served.tenant.site_id
        session.add(LocalAuthEntry(site_id=site, id_tag=TOKEN["idToken"], status="Accepted", created_at=T0))
    occupied = call.StatusNotification(timestamp=T0.isoformat(), connector_status="Occupied", evse_id=1, connector_id=1)
    async with station_201(served, kind=Answering) as (point, _):
        await point.call(occupied)
        started = {"evse": {"id": 1, "connectorId": 1}, "id_token": TOKEN, "trigger_reason": "Authorized"}
        await transaction_event(point, "Started", 0, meter_value=energy(1000, "Transaction.Begin", 0), **started)
        await transaction_event(point, "Updated", 1, info={"chargingState": "Charging"})
        await served.edge.message_log.run_once()
    async with station_201(served, kind=Answering, ocpp_url=f"ws://127.0.0.1:{port}/ocpp") as (point, _):
        await point.call(occupied)
        accepted = await transaction_event(point, "Updated", 2, meter_value=energy(2500, "Sample.Periodic", 2))
        assert accepted is not None
        await second.edge.message_log.run_once()  # the store shows it connected to the second process
        await served.edge.message_log.run_once()  # and the first writes, later, that it went away: old news
        # The first process's API reaches it through the second.
        async with httpx.AsyncClient(
            base_url=f"{served.http_url}/api/v1", headers={"Authorization": f"Bearer {served.token}"}, timeout=10
        ) as api:
            reset = await api.post("/charge-points/CS-1/reset", json={"type": "Hard"})
        assert (reset.status_code, reset.json()) == (200, {"status": "Scheduled"})
        ended = energy(4000, "Transaction.End", 3)
        await transaction_event(point, "Ended", 3, trigger_reason="EVDeparted", meter_value=ended)
        assert point.received == [("Reset", {"type": "Immediate"})]

    events = await served.events()
    assert len({event["eventId"] for event in events}) == len(events)
    statuses = [e["payload"]["status"] for e in events if e["eventType"] == "ChargePointStatus"]
    assert statuses == ["Preparing", "Charging", "Finishing"]
    [start] = [e["payload"] for e in events if e["eventType"] == "StartTransaction"]
    [stop] = [e["payload"] for e in events if e["eventType"] == "StopTransaction"]
    assert (stop["transactionId"], stop["meterStart"], stop["meterStop"]) == (start["transactionId"], 1.0, 4.0)
