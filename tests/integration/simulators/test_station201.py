"""The simulated 2.0.1 station against an independent central system: the `ocpp` package's own v201 ChargePoint,
used as the CSMS with its `@on` handlers and its schema checks, served over real `websockets` on loopback."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

import pytest
from ocpp.exceptions import NotSupportedError
from ocpp.routing import on
from ocpp.v201 import ChargePoint, call, call_result
from ocpp.v201.enums import Action
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from chargenet.simulators.ocpp201.station import SimulatedStation201
from chargenet.simulators.ocpp201.transactions import IdToken
from chargenet.simulators.scenario import run_fleet
from tests.support.processes import eventually

STATION = "CS-201"
PASSWORD = "station-201-key"
Payload = dict[str, Any]


def _now() -> str:
    return datetime.now(UTC).isoformat()


class RecordingSocket:
    """The CSMS's side of the socket, keeping every frame the station sends, as it was on the wire."""

    def __init__(self, socket: ServerConnection, frames: list[list[Any]]) -> None:
        self._socket, self._frames = socket, frames

    async def recv(self) -> str | bytes:
        message = await self._socket.recv()
        self._frames.append(json.loads(message))
        return message

    async def send(self, message: str) -> None:
        await self._socket.send(message)


class Csms(ChargePoint):
    @on(Action.boot_notification)
    def on_boot(self, **_: Any) -> Any:
        return call_result.BootNotification(current_time=_now(), interval=42, status="Accepted")

    @on(Action.heartbeat)
    def on_heartbeat(self, **_: Any) -> Any:
        return call_result.Heartbeat(current_time=_now())

    @on(Action.status_notification)
    def on_status(self, **_: Any) -> Any:
        return call_result.StatusNotification()

    @on(Action.authorize)
    def on_authorize(self, **_: Any) -> Any:
        return call_result.Authorize(id_token_info={"status": "Accepted"})

    @on(Action.transaction_event)
    def on_transaction_event(self, **_: Any) -> Any:
        return call_result.TransactionEvent()

    @on(Action.meter_values)
    def on_meter_values(self, **_: Any) -> Any:
        return call_result.MeterValues()

    @on(Action.notify_report)
    def on_notify_report(self, **_: Any) -> Any:
        return call_result.NotifyReport()


@dataclass
class ServedCsms:
    url: str = ""
    frames: list[list[Any]] = field(default_factory=list)  # what stations sent, in order, across connections
    points: dict[str, Csms] = field(default_factory=dict)  # station id -> its latest connection
    connections: int = 0

    def calls(self, action: str) -> list[Payload]:
        return [frame[3] for frame in self.frames if frame[0] == 2 and frame[2] == action]

    def actions(self) -> list[str]:
        return [frame[2] for frame in self.frames if frame[0] == 2]

    async def command(self, payload: Any) -> Any:
        return await self.points[STATION].call(payload, suppress=False)


@pytest.fixture
async def csms() -> AsyncIterator[ServedCsms]:
    served = ServedCsms()
    expected = "Basic " + base64.b64encode(f"{STATION}:{PASSWORD}".encode()).decode()

    def check(connection: ServerConnection, request: Request) -> Response | None:
        if request.path != f"/ocpp/{STATION}" or request.headers.get("Authorization") != expected:
            return connection.respond(HTTPStatus.UNAUTHORIZED, "")
        return None

    async def handle(socket: ServerConnection) -> None:
        point = Csms(STATION, RecordingSocket(socket, served.frames))
        served.points[STATION] = point
        served.connections += 1
        with contextlib.suppress(ConnectionClosed):
            await point.start()

    async with serve(handle, "127.0.0.1", 0, subprotocols=[Subprotocol("ocpp2.0.1")], process_request=check) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        served.url = f"ws://127.0.0.1:{port}/ocpp"
        yield served


@pytest.fixture
async def station(csms: ServedCsms) -> AsyncIterator[SimulatedStation201]:
    station = SimulatedStation201(csms.url, STATION, PASSWORD)
    await station.connect()
    await station.boot()
    yield station
    await station.settle()
    await station.close()


def energy(event: Payload) -> list[tuple[str, int]]:
    return [(s["context"], s["value"]) for value in event.get("meterValue", []) for s in value["sampledValue"]]


async def test_a_session_story_reaches_the_csms_in_201_messages(csms: ServedCsms, station: SimulatedStation201) -> None:
    assert station.socket.subprotocol == "ocpp2.0.1"
    assert station.heartbeat_interval == 42  # the BootNotification's answer
    await station.heartbeat()
    await station.report_available(2)
    plugged_first = await station.plug_first_session(1, "TAG-201", wh=9000)
    badged_first = await station.id_first_session(2, "TAG-201", wh=4000)

    assert csms.calls("BootNotification") == [
        {"reason": "PowerUp", "chargingStation": {"model": "SimStation201", "vendorName": "chargenet"}}
    ]
    assert csms.calls("Authorize") == [{"idToken": {"idToken": "TAG-201", "type": "ISO14443"}}] * 2
    assert [(s["evseId"], s["connectorId"], s["connectorStatus"]) for s in csms.calls("StatusNotification")] == [
        (1, 1, "Available"),
        (2, 1, "Available"),
        (1, 1, "Occupied"),
        (1, 1, "Available"),
        (2, 1, "Occupied"),
        (2, 1, "Available"),
    ]
    events = csms.calls("TransactionEvent")
    first = [e for e in events if e["transactionInfo"]["transactionId"] == plugged_first]
    assert [(e["seqNo"], e["eventType"], e["triggerReason"]) for e in first] == [
        (0, "Started", "CablePluggedIn"),
        (1, "Updated", "Authorized"),
        (2, "Updated", "MeterValuePeriodic"),
        (3, "Ended", "EVCommunicationLost"),
    ]
    assert [e["transactionInfo"].get("chargingState") for e in first] == ["EVConnected", "Charging", None, "Idle"]
    assert [energy(e) for e in first] == [
        [("Transaction.Begin", 0)],
        [("Sample.Periodic", 0)],
        [("Sample.Periodic", 4500)],
        [("Transaction.End", 9000)],
    ]
    assert first[0]["evse"] == {"id": 1, "connectorId": 1} and "idToken" not in first[0]
    assert first[1]["idToken"] == {"idToken": "TAG-201", "type": "ISO14443"}
    assert first[3]["transactionInfo"]["stoppedReason"] == "EVDisconnected"

    second = [e for e in events if e["transactionInfo"]["transactionId"] == badged_first]
    assert [(e["seqNo"], e["eventType"]) for e in second] == [
        (0, "Started"),
        (1, "Updated"),
        (2, "Updated"),
        (3, "Ended"),
    ]
    assert second[0]["idToken"]["idToken"] == "TAG-201" and second[0]["evse"]["id"] == 2
    assert second[3]["transactionInfo"]["stoppedReason"] == "Local"
    assert plugged_first != badged_first and len(events) == 8
    assert not any(e.get("offline") for e in events)


async def test_offline_transaction_events_are_replayed_in_order_after_the_reconnect(
    csms: ServedCsms, station: SimulatedStation201
) -> None:
    await station.cable_in(1)
    await station.badge(1, "TAG-201")
    transaction = await station.begin(1, "TAG-201")
    await station.go_offline()
    await station.report(1, transaction, 3000)
    await station.end(1, transaction, 6000, "EVDisconnected")
    await station.cable_out(1)
    offline_session = await station.id_first_session(2, "TAG-201", wh=2000)
    assert len(csms.calls("TransactionEvent")) == 2  # Started and Updated, sent while online
    assert [e["seqNo"] for e in station.offline_queue] == [2, 3, 0, 1, 2, 3]

    await station.reconnect()

    assert csms.connections == 2
    events = csms.calls("TransactionEvent")
    replayed = events[2:]
    assert [(e["transactionInfo"]["transactionId"], e["seqNo"]) for e in replayed] == [
        (transaction.transaction_id, 2),
        (transaction.transaction_id, 3),
        *((offline_session, n) for n in range(4)),
    ]
    assert all(e["offline"] is True for e in replayed) and not any("offline" in e for e in events[:2])
    assert [energy(e)[0][1] for e in replayed] == [3000, 6000, 0, 0, 1000, 2000]
    assert station.offline_queue == []
    # The connectors' statuses that changed meanwhile follow the replay.
    assert csms.actions()[-2:] == ["StatusNotification"] * 2
    assert [s["connectorStatus"] for s in csms.calls("StatusNotification")[-2:]] == ["Available", "Available"]


async def test_device_model_report_local_list_cache_and_data_transfer_commands_are_answered(
    csms: ServedCsms, station: SimulatedStation201
) -> None:
    heartbeat = {"component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "HeartbeatInterval"}}
    got = await csms.command(
        call.GetVariables(get_variable_data=[heartbeat, {"component": {"name": "Nowhere"}, "variable": {"name": "X"}}])
    )
    assert [(r["attribute_status"], r.get("attribute_value")) for r in got.get_variable_result] == [
        ("Accepted", "42"),
        ("UnknownComponent", None),
    ]
    set_ = await csms.command(
        call.SetVariables(
            set_variable_data=[
                {**heartbeat, "attribute_value": "60"},
                {**heartbeat, "attribute_value": "often"},
                {"component": {"name": "SecurityCtrlr"}, "variable": {"name": "Identity"}, "attribute_value": "X"},
            ]
        )
    )
    assert [r["attribute_status"] for r in set_.set_variable_result] == ["Accepted", "Rejected", "Rejected"]
    assert station.heartbeat_interval == 60

    assert (await csms.command(call.GetBaseReport(request_id=5, report_base="SummaryInventory"))).status == (
        "NotSupported"
    )
    assert (await csms.command(call.GetBaseReport(request_id=6, report_base="FullInventory"))).status == "Accepted"
    await eventually(lambda: bool(csms.calls("NotifyReport")) and not csms.calls("NotifyReport")[-1]["tbc"])
    parts = csms.calls("NotifyReport")
    assert [(p["requestId"], p["seqNo"]) for p in parts] == [(6, n) for n in range(len(parts))] and len(parts) > 1
    reported = {(d["component"]["name"], d["variable"]["name"]): d for p in parts for d in p["reportData"]}
    assert reported["OCPPCommCtrlr", "HeartbeatInterval"]["variableAttribute"][0]["value"] == "60"

    token = {"id_token": "LOCAL-1", "type": "ISO14443"}
    full = call.SendLocalList(
        version_number=3,
        update_type="Full",
        local_authorization_list=[{"id_token": token, "id_token_info": {"status": "Accepted"}}],
    )
    assert (await csms.command(full)).status == "Accepted"
    stale = call.SendLocalList(
        version_number=3, update_type="Differential", local_authorization_list=[{"id_token": token}]
    )
    assert (await csms.command(stale)).status == "VersionMismatch"
    assert (await csms.command(call.GetLocalListVersion())).version_number == 3
    assert station.local_list == {"LOCAL-1": {"status": "Accepted"}}

    await station.authorize(IdToken("CACHED-1"))
    assert "CACHED-1" in station.auth_cache
    assert (await csms.command(call.ClearCache())).status == "Accepted"
    assert station.auth_cache == {}

    unknown_vendor = await csms.command(call.DataTransfer(vendor_id="elsewhere", message_id="Echo"))
    echo = await csms.command(call.DataTransfer(vendor_id="chargenet", message_id="Echo", data={"n": 1}))
    assert (unknown_vendor.status, echo.status, echo.data) == ("UnknownVendorId", "Accepted", {"n": 1})
    with pytest.raises(NotSupportedError):  # a 2.0.1 action this station does not handle
        await csms.command(call.ClearDisplayMessage(id=1))


async def test_commands_acting_on_charging_are_answered_by_what_the_station_is_doing(
    csms: ServedCsms, station: SimulatedStation201
) -> None:
    token = {"id_token": "REMOTE-1", "type": "Central"}
    started = await csms.command(call.RequestStartTransaction(id_token=token, remote_start_id=7, evse_id=1))
    assert started.status == "Accepted"
    await eventually(lambda: bool(csms.calls("TransactionEvent")))
    [start] = csms.calls("TransactionEvent")
    assert (start["eventType"], start["triggerReason"], start["transactionInfo"]["remoteStartId"]) == (
        "Started",
        "RemoteStart",
        7,
    )
    transaction_id = start["transactionInfo"]["transactionId"]
    again = await csms.command(call.RequestStartTransaction(id_token=token, remote_start_id=8, evse_id=1))
    assert again.status == "Rejected"  # EVSE 1 charges already

    profile = {
        "id": 1,
        "stack_level": 0,
        "charging_profile_purpose": "TxProfile",
        "charging_profile_kind": "Absolute",
        "charging_schedule": [
            {"id": 1, "charging_rate_unit": "A", "charging_schedule_period": [{"start_period": 0, "limit": 16}]}
        ],
    }
    assert (await csms.command(call.SetChargingProfile(evse_id=2, charging_profile=profile))).status == "Rejected"
    assert (await csms.command(call.SetChargingProfile(evse_id=1, charging_profile=profile))).status == "Accepted"
    trigger = call.TriggerMessage(requested_message="MeterValues", evse={"id": 1})
    assert (await csms.command(trigger)).status == "Accepted"
    await eventually(lambda: bool(csms.calls("MeterValues")))
    [sampled] = csms.calls("MeterValues")[0]["meterValue"][0]["sampledValue"][1:]
    assert (sampled["measurand"], sampled["value"], sampled["context"]) == ("Power.Active.Import", 11040, "Trigger")
    booted = call.TriggerMessage(requested_message="BootNotification")
    assert (await csms.command(booted)).status == "Rejected"  # accepted already

    unlock = await csms.command(call.UnlockConnector(evse_id=1, connector_id=1))
    unknown = await csms.command(call.UnlockConnector(evse_id=9, connector_id=1))
    assert (unlock.status, unknown.status) == ("OngoingAuthorizedTransaction", "UnknownConnector")

    reserve = {"expiry_date_time": _now(), "id_token": {"id_token": "R-1", "type": "ISO14443"}}
    assert (await csms.command(call.ReserveNow(id=1, evse_id=1, **reserve))).status == "Occupied"
    assert (await csms.command(call.ReserveNow(id=2, evse_id=2, **reserve))).status == "Accepted"
    assert (await csms.command(call.CancelReservation(reservation_id=99))).status == "Rejected"
    assert (await csms.command(call.CancelReservation(reservation_id=2))).status == "Accepted"
    await eventually(lambda: len(csms.calls("StatusNotification")) == 3)
    assert [s["connectorStatus"] for s in csms.calls("StatusNotification")] == ["Occupied", "Reserved", "Available"]

    inoperative = call.ChangeAvailability(operational_status="Inoperative", evse={"id": 1})
    assert (await csms.command(inoperative)).status == "Scheduled"
    assert (await csms.command(call.Reset(type="OnIdle"))).status == "Scheduled"
    assert (await csms.command(call.RequestStopTransaction(transaction_id="not-ours"))).status == "Rejected"
    stopped = await csms.command(call.RequestStopTransaction(transaction_id=transaction_id))
    assert stopped.status == "Accepted"

    # Once idle, EVSE 1 goes Unavailable and the scheduled reset reboots the station on a new connection.
    await eventually(lambda: csms.connections == 2 and len(csms.calls("BootNotification")) == 2)
    await eventually(lambda: len(csms.calls("StatusNotification")) == 6)
    ended = csms.calls("TransactionEvent")[-1]
    assert (ended["eventType"], ended["transactionInfo"]["stoppedReason"]) == ("Ended", "Remote")
    assert csms.calls("BootNotification")[-1]["reason"] == "RemoteReset"
    assert [(s["evseId"], s["connectorStatus"]) for s in csms.calls("StatusNotification")[3:]] == [
        (1, "Unavailable"),
        (1, "Unavailable"),
        (2, "Available"),
    ]


async def test_the_scenario_drives_a_station_named_as_201_in_201_messages(csms: ServedCsms) -> None:
    result = await run_fleet(csms.url, [STATION], PASSWORD, "TAG-201", cycles=2, pause=0, ocpp201={STATION})
    events = csms.calls("TransactionEvent")
    assert {e["transactionInfo"]["transactionId"] for e in events} == set(result[STATION]) and len(result[STATION]) == 2
    assert [e["eventType"] for e in events].count("Ended") == 2
    assert csms.actions()[:2] == ["BootNotification", "StatusNotification"]
