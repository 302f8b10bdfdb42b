"""Bad input on an OCPP 2.0.1 connection: every CALLERROR where decisions.md §5 places it, in 2.0.1's words.

The connection shell is driven in memory with the 2.0.1 face's dialect; its handler reads each CALL with the face's
parsers, as the station link does, so a payload the schemas allow but the station's tree does not (an EVSE it was
never given) is refused as the link refuses it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from chargenet.clock import ManualClock
from chargenet.domain.tenants import StationLayout
from chargenet.edge.connection import RpcConnection
from chargenet.edge.ocpp16.errors import UnsupportedAction
from chargenet.edge.ocpp16.frames import Call, Payload
from chargenet.edge.ocpp201 import parse, render
from chargenet.edge.ocpp201.dialect import Ocpp201Dialect

LAYOUT = StationLayout("CS-201", charge_points=2, connectors_per_charge_point=2)
NOW = "2026-07-01T12:00:00Z"
TOKEN = {"idToken": "04A2B3C4D5E6F7", "type": "ISO14443"}


def transaction_event(**changes: Any) -> Payload:
    payload: Payload = {
        "eventType": "Started",
        "timestamp": NOW,
        "triggerReason": "Authorized",
        "seqNo": 0,
        "transactionInfo": {"transactionId": "TX-1"},
        "evse": {"id": 1, "connectorId": 1},
        "idToken": TOKEN,
    }
    payload.update(changes)
    return payload


class Wire:
    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.arrived = asyncio.Event()

    async def send(self, text: str) -> None:
        self.sent.append(json.loads(text))
        self.arrived.set()


async def face_handler(call: Call) -> Payload:
    if call.action in render.NOT_SUPPORTED:
        raise UnsupportedAction(call.action, unique_id=call.unique_id)
    if call.action == "TransactionEvent":
        parse.transaction_report(LAYOUT, call.payload)
    elif call.action == "StatusNotification":
        parse.connector_report(LAYOUT, call.payload)
    return render.local_answer(call.action, datetime(2026, 7, 1, tzinfo=UTC))


@pytest.fixture
async def connection() -> AsyncIterator[tuple[RpcConnection, Wire]]:
    wire = Wire()
    clock = ManualClock(datetime(2026, 7, 1, 12, 0, tzinfo=UTC))
    rpc = RpcConnection("test", wire.send, clock, face_handler, dialect=Ocpp201Dialect())
    yield rpc, wire
    await rpc.close()


async def answer_to(connection: tuple[RpcConnection, Wire], text: str) -> Any:
    rpc, wire = connection
    await rpc.feed(text)
    for _ in range(50):
        if wire.sent:
            return wire.sent.pop(0)
        await asyncio.sleep(0)
    return None


def call(action: str, payload: Any, unique_id: str = "m-1") -> str:
    return json.dumps([2, unique_id, action, payload])


STATUS = {"timestamp": NOW, "connectorStatus": "Available", "evseId": 1, "connectorId": 1}

CASES = [
    ("an unknown message type", json.dumps([7, "m-1", "Heartbeat", {}]), "m-1", "MessageTypeNotSupported"),
    ("a message id over 36 characters", call("Heartbeat", {}, "x" * 37), "x" * 37, "RpcFrameworkError"),
    ("a message id that is no string", json.dumps([2, 5, "Heartbeat", {}]), "-1", "RpcFrameworkError"),
    ("a frame that is not JSON", '[2, "m-1", "Heartbeat", {', "m-1", "FormatViolation"),
    ("a CALL of the wrong shape", json.dumps([2, "m-1", "Heartbeat"]), "m-1", "FormatViolation"),
    ("an unknown action", call("Teleport", {}), "m-1", "NotImplemented"),
    ("a 1.6 action on a 2.0.1 connection", call("StartTransaction", {"connectorId": 1}), "m-1", "NotImplemented"),
    (
        "a central system's action from a station",
        call("RequestStartTransaction", {}),
        "m-1",
        "OccurrenceConstraintViolation",
    ),
    (
        "a known action the edge does not handle",
        call("Get15118EVCertificate", {"iso15118SchemaVersion": "x", "action": "Install", "exiRequest": "x"}),
        "m-1",
        "NotSupported",
    ),
    (
        "a charging limit notice",
        call("NotifyChargingLimit", {"chargingLimit": {"chargingLimitSource": "EMS"}}),
        "m-1",
        "NotSupported",
    ),
    (
        "a field of the wrong type",
        call("StatusNotification", {**STATUS, "evseId": "1"}),
        "m-1",
        "TypeConstraintViolation",
    ),
    (
        "a required field left out",
        call("BootNotification", {"reason": "PowerUp"}),
        "m-1",
        "OccurrenceConstraintViolation",
    ),
    (
        "a value outside its enum",
        call("StatusNotification", {**STATUS, "connectorStatus": "Charging"}),
        "m-1",
        "PropertyConstraintViolation",
    ),
    ("a property the PDU does not have", call("Heartbeat", {"now": 1}), "m-1", "FormatViolation"),
    (
        "a string over its length",
        call("Authorize", {"idToken": {"idToken": "x" * 37, "type": "ISO14443"}}),
        "m-1",
        "TypeConstraintViolation",
    ),
    (
        "an EVSE the station was never given",
        call("StatusNotification", {**STATUS, "evseId": 3}),
        "m-1",
        "PropertyConstraintViolation",
    ),
    (
        "a connector the EVSE was never given",
        call("StatusNotification", {**STATUS, "connectorId": 3}),
        "m-1",
        "PropertyConstraintViolation",
    ),
    (
        "a transaction on EVSE 0, the whole station",
        call("TransactionEvent", transaction_event(evse={"id": 0})),
        "m-1",
        "PropertyConstraintViolation",
    ),
    (
        "a transaction on an EVSE never given",
        call("TransactionEvent", transaction_event(evse={"id": 9})),
        "m-1",
        "PropertyConstraintViolation",
    ),
]


@pytest.mark.parametrize(("text", "answer_id", "code"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
async def test_bad_input_gets_its_2_0_1_callerror(
    connection: tuple[RpcConnection, Wire], text: str, answer_id: str, code: str
) -> None:
    answer = await answer_to(connection, text)
    assert answer is not None and answer[:3] == [4, answer_id, code]


async def test_an_answer_of_an_unknown_shape_is_not_answered(connection: tuple[RpcConnection, Wire]) -> None:
    assert await answer_to(connection, json.dumps([3, "m-1"])) is None


async def test_what_the_station_may_send_is_answered_in_2_0_1_words(connection: tuple[RpcConnection, Wire]) -> None:
    assert await answer_to(connection, call("Heartbeat", {})) == [3, "m-1", {"currentTime": "2026-07-01T00:00:00.000Z"}]
    answer = await answer_to(
        connection, call("TransactionEvent", transaction_event(evse={"id": 2, "connectorId": 2}), "m-2")
    )
    assert answer == [3, "m-2", {}]
