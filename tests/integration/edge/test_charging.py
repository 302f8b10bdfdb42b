"""Charging without an upstream: the edge is the central system. Real WebSockets, events read from the outbox."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from chargenet.services.callers import OPERATOR
from chargenet.simulators.station import SimulatedStation, StationCallError
from chargenet.store.models import (
    ConnectorStatusHistory,
    EdgeTransaction,
    LocalAuthEntry,
    OcppMessage,
    StationPresence,
    UnknownStop,
)
from tests.factories import add_station
from tests.integration.edge.conftest import Served


@pytest.fixture
async def station(station: SimulatedStation) -> AsyncIterator[SimulatedStation]:
    yield station
    assert station.sent_errors == []  # every CALL got a CALLRESULT unless the test expected otherwise


async def add_tag(
    served: Served,
    id_tag: str,
    status: str = "Accepted",
    expires_at: datetime | None = None,
    *,
    site_id: str | None = None,
) -> None:
    async with served.context.store.transaction() as session:
        session.add(
            LocalAuthEntry(
                site_id=site_id or served.tenant.site_id,
                id_tag=id_tag,
                status=status,
                expires_at=expires_at,
                created_at=datetime.now(UTC),
            )
        )


def payloads(events: list[dict[str, object]]) -> list[object]:
    return [event["payload"] for event in events]


async def test_start_transaction_on_connector_zero_is_refused_and_stores_nothing(
    served: Served, station: SimulatedStation
) -> None:
    await add_tag(served, "TAG1")
    with pytest.raises(StationCallError) as caught:
        await station.start(0, "TAG1")
    station.sent_errors.clear()  # the one CALLERROR this test expects
    assert (caught.value.code, caught.value.details) == ("PropertyConstraintViolation", {"field": "connectorId"})
    async with served.context.store.transaction() as session:
        assert list(await session.scalars(select(EdgeTransaction))) == []
    assert await served.events("StartTransaction") == [] and await served.events("Authorize") == []


async def test_first_status_of_a_connector_raises_an_event(served: Served, station: SimulatedStation) -> None:
    await station.status(1, "Available")
    [event] = await served.events("ChargePointStatus")
    assert event["payload"] == {
        "stationId": "CS-1",
        "chargePointId": "CS-1",
        "connectorId": 1,
        "status": "Available",
        "errorCode": "NoError",
    }


async def test_unchanged_status_raises_no_event(served: Served, station: SimulatedStation) -> None:
    await station.status(1, "Available")
    await station.status(1, "Available")
    assert len(await served.events("ChargePointStatus")) == 1


async def test_unexpected_transition_is_sent_recorded_and_counted(served: Served, station: SimulatedStation) -> None:
    await station.status(1, "Available")
    await station.status(1, "Finishing")
    assert [p["status"] for p in payloads(await served.events("ChargePointStatus"))] == ["Available", "Finishing"]  # type: ignore[index]
    assert served.edge.transitions.unexpected == {"A6": 1}
    async with served.context.store.transaction() as session:
        rows = list(await session.scalars(select(ConnectorStatusHistory).order_by(ConnectorStatusHistory.id)))
    assert [(r.transition, r.expected) for r in rows] == [("-1", True), ("A6", False)]


async def test_late_status_is_history_and_raises_no_event(served: Served, station: SimulatedStation) -> None:
    await station.status(1, "Charging", timestamp="2026-01-01T10:00:00Z")
    await station.status(1, "Preparing", timestamp="2026-01-01T09:00:00Z")
    assert [p["status"] for p in payloads(await served.events("ChargePointStatus"))] == ["Charging"]  # type: ignore[index]


async def test_connector_zero_raises_one_event_for_connector_zero(served: Served, station: SimulatedStation) -> None:
    await station.status(0, "Unavailable")
    [event] = await served.events("ChargePointStatus")
    assert event["payload"]["connectorId"] == 0  # type: ignore[index]


async def test_fault_raises_a_status_event_with_its_error_code(served: Served, station: SimulatedStation) -> None:
    await station.status(1, "Available")
    await station.fault(1, "GroundFailure")
    assert payloads(await served.events("ChargePointStatus"))[-1]["errorCode"] == "GroundFailure"  # type: ignore[index]


async def test_heartbeat_and_connection_are_recorded(served: Served, station: SimulatedStation) -> None:
    await station.heartbeat()
    await served.edge.message_log.run_once()  # heartbeats are written with the next batch
    async with served.context.store.transaction() as session:
        row = await session.get(StationPresence, "CS-1")
    assert row is not None and row.connected and row.last_heartbeat_at is not None
    assert row.vendor == "chargenet"


async def test_plug_first_session_publishes_start_and_stop_in_kwh(served: Served, station: SimulatedStation) -> None:
    await add_tag(served, "TAG1")
    transaction_id = await station.plug_first_session(1, "TAG1", wh=7250)
    [start] = await served.events("StartTransaction")
    [stop] = await served.events("StopTransaction")
    assert start["payload"] == {
        "stationId": "CS-1",
        "chargePointId": "CS-1",
        "connectorId": 1,
        "idTag": "TAG1",
        "meterStart": 0.0,
        "transactionId": transaction_id,
    }
    assert stop["payload"]["meterStop"] == 7.25 and stop["payload"]["reason"] == "EVDisconnected"  # type: ignore[index]
    assert stop["payload"]["transactionId"] == transaction_id  # type: ignore[index]


async def test_a_session_charged_over_time_reports_its_meter_rising_at_each_interval(
    served: Served, station: SimulatedStation
) -> None:
    await add_tag(served, "TAG1")
    await station.id_first_session(1, "TAG1", wh=3000, charging_seconds=0.3, meter_every=0.1)
    await served.edge.message_log.run_once()
    async with served.context.store.transaction() as session:
        frames = list(
            await session.scalars(
                select(OcppMessage.frame)
                .where(OcppMessage.station_id == "CS-1", OcppMessage.message_type == 2)
                .where(OcppMessage.direction == "in", OcppMessage.action == "MeterValues")
                .order_by(OcppMessage.id)
            )
        )
    sampled = [json.loads(frame)[3]["meterValue"][0]["sampledValue"] for frame in frames]
    assert sampled == [[{"value": wh, "unit": "Wh"}] for wh in ("1000", "2000", "3000")]


async def test_id_first_session_stop_without_reason_is_local(served: Served, station: SimulatedStation) -> None:
    await add_tag(served, "TAG1")
    await station.id_first_session(1, "TAG1")
    [stop] = await served.events("StopTransaction")
    assert stop["payload"]["reason"] == "Local"  # type: ignore[index]


async def test_authorize_and_start_each_publish_an_authorize_event(served: Served, station: SimulatedStation) -> None:
    await add_tag(served, "TAG1")
    await station.plug_first_session(1, "TAG1")
    events = payloads(await served.events("Authorize"))
    assert events == [
        {"stationId": "CS-1", "idTag": "TAG1", "status": "Accepted"},
        {"stationId": "CS-1", "idTag": "TAG1", "status": "Accepted", "chargePointId": "CS-1", "connectorId": 1},
    ]


async def test_transaction_ids_are_positive_and_unique_across_stations(
    served: Served, station: SimulatedStation
) -> None:
    await add_tag(served, "TAG1")
    await add_tag(served, "TAG2")
    first = await station.start(1, "TAG1")
    second = await station.start(2, "TAG2")
    assert 0 < first["transactionId"] < second["transactionId"]


async def test_resent_start_gets_the_same_id_and_no_second_event(served: Served, station: SimulatedStation) -> None:
    await add_tag(served, "TAG1")
    payload = station.start_payload(1, "TAG1", 100, "2026-01-01T10:00:00.000Z")
    first = await station.call("StartTransaction", payload)
    again = await station.call("StartTransaction", payload)
    assert again == first
    assert len(await served.events("StartTransaction")) == 1


async def test_resent_start_after_a_reconnect_gets_the_same_id(served: Served, station: SimulatedStation) -> None:
    await add_tag(served, "TAG1")
    payload = station.start_payload(1, "TAG1", 100, "2026-01-01T10:00:00.000Z")
    first = await station.call("StartTransaction", payload)
    await station.close()
    await station.connect()
    assert await station.call("StartTransaction", payload) == first
    assert len(await served.events("StartTransaction")) == 1


async def test_resent_stop_gets_an_empty_answer_and_no_second_event(served: Served, station: SimulatedStation) -> None:
    await add_tag(served, "TAG1")
    started = await station.start(1, "TAG1")
    stop = station.stop_payload(started["transactionId"], 5000)
    assert await station.call("StopTransaction", stop) == {}
    assert await station.call("StopTransaction", stop) == {}
    assert len(await served.events("StopTransaction")) == 1


async def test_stop_for_an_unknown_transaction_is_acknowledged_and_recorded(
    served: Served, station: SimulatedStation
) -> None:
    assert await station.stop(424242, 5000) == {}
    assert await served.events("StopTransaction") == []
    async with served.context.store.transaction() as session:
        rows = list(await session.scalars(select(UnknownStop)))
    assert [r.transaction_id for r in rows] == [424242]


async def test_stop_of_another_stations_transaction_raises_no_event(served: Served, station: SimulatedStation) -> None:
    await add_tag(served, "TAG1")
    await served.add_station("CS-2")
    started = await station.start(1, "TAG1")
    other = served.station("CS-2", password=None)
    await other.connect()
    assert await other.stop(started["transactionId"], 10) == {}
    assert await served.events("StopTransaction") == []
    await other.close()


@pytest.mark.sqlite_only(reason="a message acknowledged or refused without anything stored")
async def test_meter_values_are_acknowledged(station: SimulatedStation, served: Served) -> None:
    await add_tag(served, "TAG1")
    started = await station.start(1, "TAG1")
    assert await station.meter_values(1, started["transactionId"], 1234) == {}


@pytest.mark.parametrize(
    ("status", "expires_in", "expected"),
    [
        ("Blocked", None, "Blocked"),
        ("Accepted", -60, "Expired"),
        ("Expired", None, "Expired"),
        ("Invalid", None, "Invalid"),
    ],
)
async def test_authorize_from_the_local_list(
    served: Served, station: SimulatedStation, status: str, expires_in: int | None, expected: str
) -> None:
    expiry = datetime.now(UTC) + timedelta(seconds=expires_in) if expires_in is not None else None
    await add_tag(served, "TAG9", status, expiry)
    assert (await station.authorize("TAG9"))["idTagInfo"]["status"] == expected


@pytest.mark.sqlite_only(reason="a message acknowledged or refused without anything stored")
async def test_unknown_tag_without_upstream_is_invalid(station: SimulatedStation) -> None:
    assert (await station.authorize("NOBODY"))["idTagInfo"] == {"status": "Invalid"}


async def test_tag_with_an_active_transaction_is_concurrent_tx(served: Served, station: SimulatedStation) -> None:
    await add_tag(served, "TAG1")
    await station.start(1, "TAG1")
    assert (await station.authorize("TAG1"))["idTagInfo"]["status"] == "ConcurrentTx"


async def test_tag_charging_at_another_site_is_not_concurrent_tx(served: Served, station: SimulatedStation) -> None:
    from chargenet.services import sites

    now = datetime.now(UTC)
    async with served.context.store.transaction() as session:
        cipher = served.context.keys.credential_cipher()
        other = await sites.create_site(
            session, OPERATOR, cipher, company_id=served.tenant.company_id, name="Other", now=now
        )
        await add_station(session, served.context.keys, other.id, "CS-2", now)
    await add_tag(served, "TAG1")
    await add_tag(served, "TAG1", site_id=other.id)
    elsewhere = served.station("CS-2", password=None)
    await elsewhere.connect()
    assert (await elsewhere.start(1, "TAG1"))["idTagInfo"]["status"] == "Accepted"
    assert (await station.authorize("TAG1"))["idTagInfo"]["status"] == "Accepted"
    await elsewhere.close()


async def test_new_start_on_a_connector_with_an_open_transaction_closes_it(
    served: Served, station: SimulatedStation
) -> None:
    await add_tag(served, "TAG1")
    lost = await station.start(1, "TAG1", 1000, "2026-01-01T10:00:00.000Z")  # its StopTransaction never comes
    started = await station.start(1, "TAG1", 8500, "2026-01-01T12:00:00.000Z")
    assert started["idTagInfo"]["status"] == "Accepted"
    [stop] = payloads(await served.events("StopTransaction"))
    assert stop == {
        "stationId": "CS-1",
        "chargePointId": "CS-1",
        "connectorId": 1,
        "idTag": "TAG1",
        "meterStart": 1.0,
        "meterStop": 8.5,
        "transactionId": lost["transactionId"],
        "reason": "Other",
    }
    assert await station.stop(lost["transactionId"], 8000) == {}  # the lost stop turning up after all
    assert len(await served.events("StopTransaction")) == 1


async def test_start_older_than_the_open_transaction_of_its_connector_closes_nothing(
    served: Served, station: SimulatedStation
) -> None:
    await add_tag(served, "TAG1")
    await add_tag(served, "TAG2")
    await station.start(1, "TAG1", 1000, "2026-01-01T12:00:00.000Z")
    await station.start(1, "TAG2", 0, "2026-01-01T10:00:00.000Z")  # a late message of an earlier transaction
    assert await served.events("StopTransaction") == []


@pytest.mark.sqlite_only(reason="a message acknowledged or refused without anything stored")
async def test_data_transfer_without_upstream_is_unknown_vendor(station: SimulatedStation) -> None:
    assert await station.call("DataTransfer", {"vendorId": "acme"}) == {"status": "UnknownVendorId"}


@pytest.mark.sqlite_only(reason="a message acknowledged or refused without anything stored")
async def test_firmware_and_diagnostics_notifications_are_acknowledged(station: SimulatedStation) -> None:
    assert await station.call("FirmwareStatusNotification", {"status": "Installed"}) == {}
    assert await station.call("DiagnosticsStatusNotification", {"status": "Uploaded"}) == {}


async def test_reconnect_storm_with_resent_messages_loses_and_duplicates_no_event(served: Served) -> None:

    ids = [f"STORM-{n}" for n in range(20)]
    async with served.context.store.transaction() as session:
        for station_id in ids:
            await add_station(session, served.context.keys, served.tenant.site_id, station_id, datetime.now(UTC))
    await add_tag(served, "FLEET")
    fleet = [served.station(station_id, password=None) for station_id in ids]

    async def first_life(station: SimulatedStation) -> tuple[dict[str, object], dict[str, object]]:
        await station.connect()
        await station.boot()
        await station.status(1, "Available")
        start = station.start_payload(1, "FLEET", 0)
        answer = await station.call("StartTransaction", start)
        await station.close()
        return start, answer

    lives = await asyncio.gather(*(first_life(s) for s in fleet))

    async def after_reconnect(station: SimulatedStation, start: dict[str, object], answer: dict[str, object]) -> None:
        await station.connect()  # no new BootNotification, as OCPP-J §5.3 allows
        assert await station.call("StartTransaction", start) == answer  # resent: unanswered before the drop
        stop = station.stop_payload(int(answer["transactionId"]), 4000)  # type: ignore[call-overload]
        await station.call("StopTransaction", stop)
        await station.call("StopTransaction", stop)
        await station.status(1, "Available")
        await station.close()

    await asyncio.gather(*(after_reconnect(s, *life) for s, life in zip(fleet, lives, strict=True)))
    starts = [e["payload"]["transactionId"] for e in await served.events("StartTransaction")]  # type: ignore[index]
    stops = [e["payload"]["transactionId"] for e in await served.events("StopTransaction")]  # type: ignore[index]
    assert sorted(starts) == sorted(stops) and len(set(starts)) == 20
    assert len(await served.events("ChargePointStatus")) == 20
    assert all(s.sent_errors == [] for s in fleet)
