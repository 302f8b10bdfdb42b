"""OCPP 2.0.1 stations at the edge, driven by an independent peer: the `ocpp` package's own v201 `ChargePoint`
over real WebSockets, on SQLite and on PostgreSQL.

One story per test: a station negotiates 2.0.1, boots, reports its connector, authorizes and charges, and partners
get the same four events a 1.6 station raises, with the 2.0.1 fields added (decisions.md §5).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
from ocpp.v201 import ChargePoint, call
from sqlalchemy import select
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from chargenet.edge.ocpp16.frames import Call, Payload
from chargenet.edge.station201 import Station201Link
from chargenet.errors import CommandNotForGeneration
from chargenet.services import charge_points, stations
from chargenet.services.callers import OPERATOR
from chargenet.store.models import (
    EdgeTransaction,
    LocalAuthEntry,
    StationNotice,
    StationPresence,
    UnstartedTransaction,
)
from tests.integration.edge.conftest import PASSWORD, Served
from tests.integration.edge.test_charge_point_state import charge_points as listed_charge_points

PointT = TypeVar("PointT", bound=ChargePoint)
TOKEN = {"idToken": "04A2B3C4D5E6F7A8B9", "type": "ISO14443"}
T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def at(minutes: int) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def energy(wh: int, context: str, minutes: int) -> list[dict[str, Any]]:
    sampled = {"value": wh, "measurand": "Energy.Active.Import.Register", "context": context}
    return [{"timestamp": at(minutes), "sampledValue": [sampled]}]


def basic(station_id: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{station_id}:{password}".encode()).decode()}


@asynccontextmanager
async def station_201(
    served: Served, station_id: str = "CS-1", kind: type[PointT] = ChargePoint, ocpp_url: str | None = None
) -> AsyncIterator[tuple[PointT, ClientConnection]]:
    """The `ocpp` package's v201 charge point (or `kind` of it), connected offering 2.0.1 first and 1.6 second
    (to `ocpp_url`, another process's, when given)."""
    socket = await connect(
        f"{ocpp_url or served.ocpp_url}/{station_id}",
        subprotocols=[Subprotocol("ocpp2.0.1"), Subprotocol("ocpp1.6")],
        additional_headers=basic(station_id, PASSWORD),
    )
    point = kind(station_id, socket)
    reader = asyncio.create_task(point.start())
    try:
        yield point, socket
    finally:
        reader.cancel()
        await socket.close()


async def transaction_event(point: ChargePoint, event_type: str, seq_no: int, **fields: Any) -> Any:
    return await point.call(
        call.TransactionEvent(
            event_type=event_type,
            timestamp=fields.pop("timestamp", at(seq_no)),
            trigger_reason=fields.pop("trigger_reason", "MeterValuePeriodic"),
            seq_no=seq_no,
            transaction_info={"transactionId": "TX-7", **fields.pop("info", {})},
            **fields,
        )
    )


async def test_a_2_0_1_station_charges_and_partners_get_the_events_a_1_6_station_raises(served: Served) -> None:
    async with served.context.store.transaction() as session:
        site = served.tenant.site_id
        session.add(LocalAuthEntry(site_id=site, id_tag=TOKEN["idToken"], status="Accepted", created_at=T0))
    async with station_201(served) as (point, socket):
        assert socket.subprotocol == "ocpp2.0.1"
        boot = await point.call(
            call.BootNotification(charging_station={"vendorName": "Vendor", "model": "Model-201"}, reason="PowerUp")
        )
        assert (boot.status, boot.interval) == ("Accepted", 300)
        status = {"timestamp": at(0), "evse_id": 1, "connector_id": 1}
        await point.call(call.StatusNotification(connector_status="Available", **status))
        authorized = await point.call(call.Authorize(id_token=TOKEN))
        assert authorized.id_token_info["status"] == "Accepted"
        await point.call(call.StatusNotification(connector_status="Occupied", **status))

        started = await transaction_event(
            point,
            "Started",
            0,
            trigger_reason="Authorized",
            evse={"id": 1, "connectorId": 1},
            id_token=TOKEN,
            meter_value=energy(1000, "Transaction.Begin", 0),
            info={"chargingState": "EVConnected"},
        )
        assert started.id_token_info["status"] == "Accepted"
        await transaction_event(point, "Updated", 1, info={"chargingState": "Charging"})
        await transaction_event(  # seqNo 2 missing: applied all the same, the gap logged
            point, "Updated", 3, meter_value=energy(3000, "Sample.Periodic", 3), info={"chargingState": "EVConnected"}
        )
        assert await transaction_event(point, "Updated", 2, info={"chargingState": "Charging"}) is not None  # behind
        await transaction_event(
            point,
            "Ended",
            4,
            trigger_reason="EVDeparted",
            meter_value=energy(4250, "Transaction.End", 4),
            info={"chargingState": "EVConnected", "stoppedReason": "StoppedByEV"},
        )
        await transaction_event(point, "Ended", 4, trigger_reason="EVDeparted")  # resent: nothing twice
        await point.call(call.SecurityEventNotification(type="SettingSystemTime", timestamp=at(5), tech_info="NTP"))
        await point.call(
            call.NotifyEvent(
                generated_at=at(5),
                seq_no=0,
                event_data=[
                    {
                        "eventId": 1,
                        "timestamp": at(5),
                        "trigger": "Alerting",
                        "actualValue": "Occupied",
                        "eventNotificationType": "HardWiredNotification",
                        "component": {"name": "Connector", "evse": {"id": 1, "connectorId": 1}},
                        "variable": {"name": "AvailabilityState"},
                    }
                ],
            )
        )
    async with station_201(served) as (point, _):
        # Back after a time offline: the transaction it ran meanwhile comes in order, each event `offline`; its
        # token came in Started and its first reading in the next event.
        offline: dict[str, Any] = {"offline": True, "info": {"transactionId": "TX-8"}}
        started = {"evse": {"id": 1, "connectorId": 1}, "id_token": TOKEN}
        await transaction_event(point, "Started", 0, timestamp=at(10), **started, **offline)
        await transaction_event(
            point,
            "Updated",
            1,
            timestamp=at(11),
            meter_value=energy(5000, "Sample.Periodic", 11),
            **{**offline, "info": {"transactionId": "TX-8", "chargingState": "Charging"}},
        )
        ended = energy(6000, "Transaction.End", 12)
        await transaction_event(point, "Ended", 2, timestamp=at(12), meter_value=ended, **offline)
        await served.edge.message_log.run_once()

    events = await served.events()
    by_type = [(event["eventType"], event["payload"]) for event in events]
    statuses = [payload["status"] for kind, payload in by_type if kind == "ChargePointStatus"]
    assert statuses == ["Available", "Preparing", "Charging", "SuspendedEV", "Finishing", "Charging", "Finishing"]
    authorizes = [payload for kind, payload in by_type if kind == "Authorize"]
    assert authorizes[:2] == [
        {"stationId": "CS-1", "idTag": TOKEN["idToken"], "status": "Accepted", "idTokenType": "ISO14443"},
        {
            "stationId": "CS-1",
            "idTag": TOKEN["idToken"],
            "status": "Accepted",
            "idTokenType": "ISO14443",
            "chargePointId": "CS-1",
            "connectorId": 1,
        },
    ]
    [start, replayed_start] = [payload for kind, payload in by_type if kind == "StartTransaction"]
    [stop, replayed_stop] = [payload for kind, payload in by_type if kind == "StopTransaction"]
    assert (replayed_start["stationTransactionId"], replayed_start["meterStart"]) == ("TX-8", 5.0)
    assert (replayed_stop["meterStop"], replayed_stop["reason"]) == (6.0, "Local")
    assert replayed_stop["transactionId"] == replayed_start["transactionId"] > start["transactionId"]
    transaction_id = start["transactionId"]
    assert isinstance(transaction_id, int) and transaction_id > 0
    assert start == {
        "stationId": "CS-1",
        "chargePointId": "CS-1",
        "connectorId": 1,
        "idTag": TOKEN["idToken"],
        "meterStart": 1.0,
        "transactionId": transaction_id,
        "idTokenType": "ISO14443",
        "stationTransactionId": "TX-7",
    }
    assert stop == {
        "stationId": "CS-1",
        "chargePointId": "CS-1",
        "connectorId": 1,
        "idTag": TOKEN["idToken"],
        "meterStart": 1.0,
        "meterStop": 4.25,
        "transactionId": transaction_id,
        "reason": "EVDisconnected",
        "idTokenType": "ISO14443",
        "stationTransactionId": "TX-7",
        "stationReason": "StoppedByEV",
    }
    async with served.context.store.transaction() as session:
        row = await session.get(EdgeTransaction, transaction_id)
        assert row is not None and (row.station_transaction_id, row.seq_no, row.meter_stop) == ("TX-7", 4, 4250)
        notices = (await session.scalars(select(StationNotice).order_by(StationNotice.id))).all()
        assert [notice.action for notice in notices] == ["SecurityEventNotification", "NotifyEvent"]
        assert json.loads(notices[0].payload)["type"] == "SettingSystemTime"
        presence = await session.get(StationPresence, "CS-1")
        assert presence is not None and (presence.ocpp_version, presence.vendor) == ("ocpp2.0.1", "Vendor")
        view = await stations.get_station(session, OPERATOR, "CS-1")
        assert (view.ocpp_version, view.ocpp_versions) == ("ocpp2.0.1", ["ocpp2.0.1", "ocpp1.6"])
    assert served.edge.security_events.counts["SettingSystemTime"] == 1


async def test_a_plug_first_transaction_starts_at_its_first_token_even_after_a_reconnect(served: Served) -> None:
    async with served.context.store.transaction() as session:
        site = served.tenant.site_id
        session.add(LocalAuthEntry(site_id=site, id_tag=TOKEN["idToken"], status="Accepted", created_at=T0))
    plugged_in: dict[str, Any] = {"trigger_reason": "CablePluggedIn", "evse": {"id": 1, "connectorId": 1}}
    async with station_201(served) as (point, _):
        # Cable in: the EVSE and the begin reading, no token yet (OCPP 2.0.1 names the EVSE in the first event only).
        started = await transaction_event(
            point, "Started", 0, meter_value=energy(2000, "Transaction.Begin", 0), **plugged_in
        )
        assert started.id_token_info is None
        # A cable plugged in and pulled out again without a token: a transaction that never starts.
        left = {"info": {"transactionId": "TX-9"}}
        await transaction_event(point, "Started", 0, **plugged_in, **left)
        await transaction_event(point, "Ended", 1, trigger_reason="EVDeparted", **left)
    async with station_201(served) as (point, _):
        # Back on a new connection, the driver badges: this event carries the token and no EVSE.
        badged = await transaction_event(
            point,
            "Updated",
            1,
            trigger_reason="Authorized",
            id_token=TOKEN,
            meter_value=energy(2100, "Sample.Periodic", 1),
            info={"chargingState": "Charging"},
        )
        assert badged.id_token_info["status"] == "Accepted"
        await transaction_event(point, "Updated", 2, meter_value=energy(3000, "Sample.Periodic", 2))
    async with station_201(served) as (point, _):
        # Ended without a reading, on a third connection: it stops at the latest reading the edge was given.
        await transaction_event(point, "Ended", 3, trigger_reason="EVDeparted")

    [start] = await served.events("StartTransaction")
    [stop] = await served.events("StopTransaction")
    assert start["payload"] == {
        "stationId": "CS-1",
        "chargePointId": "CS-1",
        "connectorId": 1,
        "idTag": TOKEN["idToken"],
        "meterStart": 2.0,
        "transactionId": start["payload"]["transactionId"],
        "idTokenType": "ISO14443",
        "stationTransactionId": "TX-7",
    }
    assert (stop["payload"]["transactionId"], stop["payload"]["meterStop"]) == (start["payload"]["transactionId"], 3.0)
    async with served.context.store.transaction() as session:
        row = await session.get(EdgeTransaction, start["payload"]["transactionId"])
        assert row is not None and row.started_at == T0  # when the cable went in
        assert (await session.scalars(select(UnstartedTransaction))).all() == []


async def test_the_station_record_decides_which_generations_may_connect(served: Served) -> None:
    await served.add_station("PINNED", password=PASSWORD, ocpp_versions=["ocpp1.6"])
    await served.add_station("OPEN")  # no password: security profile 0, 1.6 only
    pinned = served.station("PINNED")
    assert (await pinned.connect(("ocpp2.0.1", "ocpp1.6"))).subprotocol == "ocpp1.6"
    await pinned.close()
    open_station = served.station("OPEN", password=None)
    assert (await open_station.connect(("ocpp2.0.1",))).subprotocol is None
    assert await open_station.wait_closed() == 1002
    assert (await open_station.connect(("ocpp2.0.1", "ocpp1.6"))).subprotocol == "ocpp1.6"
    await open_station.close()


async def test_on_a_site_whose_upstream_takes_1_6_only_the_edge_answers_a_2_0_1_station_itself(served: Served) -> None:
    await served.set_upstream("ws://127.0.0.1:9/nobody")  # never asked: it takes 1.6 only, the default
    async with station_201(served) as (point, socket):
        assert socket.subprotocol == "ocpp2.0.1"
        boot = await point.call(
            call.BootNotification(charging_station={"vendorName": "Vendor", "model": "Model-201"}, reason="PowerUp")
        )
        assert boot.status == "Accepted"
        unknown = await point.call(call.Authorize(id_token={"idToken": "NOBODY", "type": "eMAID"}))
        assert unknown.id_token_info["status"] == "Invalid"  # not in the local list nor the cache
        await served.edge.message_log.run_once()
        async with served.context.store.transaction() as session:
            state = await charge_points.station_state(session, OPERATOR, served.edge, "CS-1")
        assert state.answered_by_edge and state.upstream_connected is None
        point = (await listed_charge_points(served))["CS-1"]
        assert (point["connection"], point["ocppVersion"]) == ("connected", "ocpp2.0.1")
        with pytest.raises(CommandNotForGeneration):  # 1.6 words never reach a 2.0.1 station
            await served.edge.command("CS-1", "Reset", {"type": "Soft"})
    [authorize] = await served.events("Authorize")
    assert authorize["payload"] == {"stationId": "CS-1", "idTag": "NOBODY", "status": "Invalid", "idTokenType": "eMAID"}


async def test_a_heartbeat_the_edge_answers_itself_is_answered_without_the_handler(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    handled: list[str] = []
    handle = Station201Link.handle

    async def recording(link: Station201Link, received: Call) -> Payload | None:
        handled.append(received.action)
        return await handle(link, received)

    monkeypatch.setattr(Station201Link, "handle", recording)
    async with station_201(served) as (point, _):
        await point.call(call.BootNotification(charging_station={"vendorName": "V", "model": "M"}, reason="PowerUp"))
        beat = await point.call(call.Heartbeat())
        assert datetime.fromisoformat(beat.current_time) <= datetime.now(UTC)
        await served.edge.message_log.run_once()
    assert handled == ["BootNotification"]  # the Heartbeat needed no task of the connection's worker
    async with served.context.store.transaction() as session:
        presence = await session.get(StationPresence, "CS-1")
        assert presence is not None and presence.last_heartbeat_at is not None


def problem(value: str, minutes: int, **tech: str) -> call.NotifyEvent:
    data = {
        "eventId": minutes,
        "timestamp": at(minutes),
        "trigger": "Delta",
        "actualValue": value,
        "eventNotificationType": "HardWiredMonitor",
        "component": {"name": "Connector", "evse": {"id": 1, "connectorId": 1}},
        "variable": {"name": "Problem"},
        **tech,
    }
    return call.NotifyEvent(generated_at=at(minutes), seq_no=0, event_data=[data])


async def test_a_fault_reads_as_a_16_fault_and_a_reconnect_mid_charge_keeps_the_status(served: Served) -> None:
    async with served.context.store.transaction() as session:
        site = served.tenant.site_id
        session.add(LocalAuthEntry(site_id=site, id_tag=TOKEN["idToken"], status="Accepted", created_at=T0))
    occupied = call.StatusNotification(timestamp=at(0), connector_status="Occupied", evse_id=1, connector_id=1)
    async with station_201(served) as (point, _):
        await point.call(occupied)
        started = {"evse": {"id": 1, "connectorId": 1}, "id_token": TOKEN, "trigger_reason": "Authorized"}
        await transaction_event(point, "Started", 0, meter_value=energy(1000, "Transaction.Begin", 0), **started)
        await transaction_event(point, "Updated", 1, info={"chargingState": "Charging"})
        await point.call(problem("true", 2, techCode="GroundFailure", techInfo="RCD tripped"))
        await point.call(problem("false", 3))
    async with station_201(served) as (point, _):
        # A new connection: the station says its connector is occupied and goes on with the transaction.
        await point.call(occupied)
        await transaction_event(point, "Updated", 4, meter_value=energy(2000, "Sample.Periodic", 4))
        await point.call(problem("true", 5, techCode="E-4711"))
    async with station_201(served) as (point, _):
        await point.call(occupied)  # the problem stays until the station clears it
        await transaction_event(point, "Ended", 6, trigger_reason="EVDeparted")
        await point.call(problem("false", 7))

    statuses = [event["payload"] for event in await served.events("ChargePointStatus")]
    assert [(s["status"], s["errorCode"], s.get("info")) for s in statuses] == [
        ("Preparing", "NoError", None),
        ("Charging", "NoError", None),
        ("Faulted", "GroundFailure", "RCD tripped"),
        ("Charging", "NoError", None),
        ("Faulted", "OtherError", "E-4711"),
        ("Finishing", "NoError", None),
    ]
    assert statuses[2] == {
        "stationId": "CS-1",
        "chargePointId": "CS-1",
        "connectorId": 1,
        "status": "Faulted",
        "errorCode": "GroundFailure",
        "info": "RCD tripped",
    }
