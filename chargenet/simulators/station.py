"""A simulated OCPP 1.6J charge point: a real WebSocket client, scriptable from tests, the demo and benchmarks.

It speaks OCPP-J by hand (plain JSON over `websockets`) rather than through chargenet's own RPC code, so that
tests of the edge are not the edge talking to itself. Scenario helpers cover what stations do in the field:
plug-first and id-first charging, faults, and offline periods whose transaction messages are buffered and sent
after the reconnect with new message ids, as real stations do.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from ssl import SSLContext
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

Payload = dict[str, Any]
CallHandler = Callable[[Payload], Awaitable[Payload] | Payload]
log = logging.getLogger(__name__)


class StationCallError(Exception):
    """The central system answered a CALL with a CALLERROR."""

    def __init__(self, action: str, code: str, description: str, details: Payload) -> None:
        super().__init__(f"{action}: {code} {description}")
        self.action, self.code, self.description, self.details = action, code, description, details


class AnswerWithError(Exception):
    """Raised by an answer handler: the station answers the CALL with this CALLERROR instead of a result."""

    def __init__(self, code: str, description: str = "") -> None:
        super().__init__(f"{code}: {description}")
        self.code, self.description = code, description


def now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def default_answers() -> dict[str, CallHandler]:
    def accepted(_: Payload) -> Payload:
        return {"status": "Accepted"}

    return {
        "RemoteStartTransaction": accepted,
        "RemoteStopTransaction": accepted,
        "Reset": accepted,
        "UnlockConnector": lambda _: {"status": "Unlocked"},
        "ChangeAvailability": accepted,
        "ChangeConfiguration": accepted,
        "GetConfiguration": lambda _: {
            "configurationKey": [{"key": "HeartbeatInterval", "readonly": False, "value": "300"}]
        },
        "ClearCache": accepted,
        "TriggerMessage": accepted,
        "SendLocalList": accepted,
        "GetLocalListVersion": lambda _: {"listVersion": 0},
        "ReserveNow": accepted,
        "CancelReservation": accepted,
        "DataTransfer": lambda _: {"status": "UnknownVendorId"},
        "SetChargingProfile": accepted,
    }


@dataclass
class SimulatedStation:
    base_url: str  # ws://host:port/ocpp
    station_id: str
    password: str | bytes | None = None
    call_timeout: float = 10.0
    tls: SSLContext | None = None  # for wss://: the certificates to trust (None: the system's)
    answers: dict[str, CallHandler] = field(default_factory=default_answers)
    received_calls: list[tuple[str, Payload]] = field(default_factory=list)
    sent_errors: list[tuple[str, str]] = field(default_factory=list)  # CALLERRORs the central system answered
    buffered: list[tuple[str, Payload]] = field(default_factory=list)
    _socket: ClientConnection | None = None
    _reader: asyncio.Task[None] | None = None
    _pending: dict[str, asyncio.Future[Any]] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _raw: asyncio.Queue[str | bytes] = field(default_factory=asyncio.Queue)

    # Connection ------------------------------------------------------------------------------------------

    def headers(self) -> dict[str, str]:
        if self.password is None:
            return {}
        key = self.password if isinstance(self.password, bytes) else self.password.encode()
        return {"Authorization": "Basic " + base64.b64encode(self.station_id.encode() + b":" + key).decode()}

    async def connect(self, subprotocols: tuple[str, ...] = ("ocpp1.6",)) -> ClientConnection:
        self._socket = await connect(
            f"{self.base_url.rstrip('/')}/{self.station_id}",
            subprotocols=[Subprotocol(s) for s in subprotocols],
            additional_headers=self.headers(),
            open_timeout=10,
            max_size=None,
            ssl=self.tls,
        )
        self._reader = asyncio.create_task(self._read())
        return self._socket

    @property
    def socket(self) -> ClientConnection:
        assert self._socket is not None, "not connected"
        return self._socket

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._socket = None

    async def wait_closed(self, within: float = 10) -> int | None:
        """Wait for the central system to close the socket; returns the close code."""
        await asyncio.wait_for(self.socket.wait_closed(), within)
        return self.socket.close_code

    async def _read(self) -> None:
        try:
            async for message in self.socket:
                await self._dispatch(message)
        except Exception:
            log.debug("simulated station connection ended", exc_info=True)
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("connection closed"))
            self._pending.clear()

    async def _dispatch(self, message: str | bytes) -> None:
        try:
            frame = json.loads(message)
        except ValueError:
            await self._raw.put(message)
            return
        if not isinstance(frame, list) or len(frame) < 3:
            await self._raw.put(message)
            return
        if frame[0] == 2:
            await self._answer(frame[1], frame[2], frame[3])
            return
        future = self._pending.pop(frame[1], None)
        if future is None or future.done():
            await self._raw.put(message)
        elif frame[0] == 3:
            future.set_result(frame[2])
        else:
            future.set_exception(StationCallError(str(frame[1]), frame[2], frame[3], frame[4]))

    async def _answer(self, unique_id: str, action: str, payload: Payload) -> None:
        self.received_calls.append((action, payload))
        handler = self.answers.get(action)
        if handler is None:
            await self.socket.send(json.dumps([4, unique_id, "NotSupported", "", {}]))
            return
        try:
            result = handler(payload)
            if asyncio.iscoroutine(result) or isinstance(result, Awaitable):
                result = await result
        except AnswerWithError as refusal:
            await self.socket.send(json.dumps([4, unique_id, refusal.code, refusal.description, {}]))
            return
        await self.socket.send(json.dumps([3, unique_id, result]))

    # Calls -----------------------------------------------------------------------------------------------

    async def call(self, action: str, payload: Payload | None = None) -> Payload:
        """Send a CALL and return the CALLRESULT payload; raises `StationCallError` on a CALLERROR."""
        unique_id = f"{self.station_id}-{next(self._ids)}"
        future: asyncio.Future[Payload] = asyncio.get_running_loop().create_future()
        self._pending[unique_id] = future
        await self.socket.send(json.dumps([2, unique_id, action, payload or {}]))
        try:
            return await asyncio.wait_for(future, self.call_timeout)
        except StationCallError as exc:
            self.sent_errors.append((action, exc.code))
            raise StationCallError(action, exc.code, exc.description, exc.details) from None

    async def send_raw(self, data: str | bytes) -> None:
        await self.socket.send(data)

    async def next_raw(self, within: float = 5) -> Any:
        """The next frame that answered nothing we sent (a CALLERROR to a raw frame, for example), parsed."""
        message = await asyncio.wait_for(self._raw.get(), within)
        return json.loads(message)

    # Scenario helpers ------------------------------------------------------------------------------------

    async def boot(self, vendor: str = "chargenet", model: str = "SimStation") -> Payload:
        return await self.call("BootNotification", {"chargePointVendor": vendor, "chargePointModel": model})

    async def heartbeat(self) -> Payload:
        return await self.call("Heartbeat")

    async def status(
        self, connector_id: int, status: str, error_code: str = "NoError", timestamp: str | None = None
    ) -> Payload:
        payload: Payload = {"connectorId": connector_id, "errorCode": error_code, "status": status}
        payload["timestamp"] = timestamp or now_text()
        return await self.call("StatusNotification", payload)

    async def authorize(self, id_tag: str) -> Payload:
        return await self.call("Authorize", {"idTag": id_tag})

    def start_payload(self, connector_id: int, id_tag: str, meter_start: int, timestamp: str | None = None) -> Payload:
        return {
            "connectorId": connector_id,
            "idTag": id_tag,
            "meterStart": meter_start,
            "timestamp": timestamp or now_text(),
        }

    async def start(
        self, connector_id: int, id_tag: str, meter_start: int = 0, timestamp: str | None = None
    ) -> Payload:
        return await self.call("StartTransaction", self.start_payload(connector_id, id_tag, meter_start, timestamp))

    def stop_payload(self, transaction_id: int, meter_stop: int, reason: str | None = None) -> Payload:
        payload: Payload = {"transactionId": transaction_id, "meterStop": meter_stop, "timestamp": now_text()}
        if reason:
            payload["reason"] = reason
        return payload

    async def stop(self, transaction_id: int, meter_stop: int, reason: str | None = None) -> Payload:
        return await self.call("StopTransaction", self.stop_payload(transaction_id, meter_stop, reason))

    async def meter_values(
        self,
        connector_id: int,
        transaction_id: int | None,
        wh: int,
        *,
        timestamp: str | None = None,
        power_w: float | None = None,
    ) -> Payload:
        sampled: list[Payload] = [{"value": str(wh), "unit": "Wh"}]
        if power_w is not None:
            sampled.append({"value": f"{power_w:g}", "measurand": "Power.Active.Import", "unit": "W"})
        payload: Payload = {
            "connectorId": connector_id,
            "meterValue": [{"timestamp": timestamp or now_text(), "sampledValue": sampled}],
        }
        if transaction_id is not None:
            payload["transactionId"] = transaction_id
        return await self.call("MeterValues", payload)

    async def plug_first_session(
        self, connector_id: int, id_tag: str, wh: int = 7000, *, charging_seconds: float = 0.0, meter_every: float = 5.0
    ) -> int:
        """Cable in, then badge: Preparing, Authorize, Start, Charging, MeterValues, Stop, Finishing, Available."""
        await self.status(connector_id, "Preparing")
        await self.authorize(id_tag)
        started = await self.start(connector_id, id_tag, 0)
        transaction_id = int(started["transactionId"])
        await self.status(connector_id, "Charging")
        if charging_seconds > 0:
            await self.charge(connector_id, transaction_id, wh, charging_seconds, meter_every)
        else:
            await self.meter_values(connector_id, transaction_id, wh // 2)
        await self.stop(transaction_id, wh, "EVDisconnected")
        await self.status(connector_id, "Finishing")
        await self.status(connector_id, "Available")
        return transaction_id

    async def id_first_session(
        self, connector_id: int, id_tag: str, wh: int = 7000, *, charging_seconds: float = 0.0, meter_every: float = 5.0
    ) -> int:
        """Badge first, then cable: Authorize, Preparing, Start, Charging, Stop (Local), Finishing, Available."""
        await self.authorize(id_tag)
        await self.status(connector_id, "Preparing")
        started = await self.start(connector_id, id_tag, 0)
        transaction_id = int(started["transactionId"])
        await self.status(connector_id, "Charging")
        if charging_seconds > 0:
            await self.charge(connector_id, transaction_id, wh, charging_seconds, meter_every)
        await self.stop(transaction_id, wh)
        await self.status(connector_id, "Finishing")
        await self.status(connector_id, "Available")
        return transaction_id

    async def charge(self, connector_id: int, transaction_id: int, wh: int, seconds: float, every: float) -> None:
        """Deliver `wh` evenly over `seconds` of real time, reporting the energy register every `every` seconds,
        as a station's MeterValueSampleInterval does with its default sampled data (the register alone: a demo
        delivers kilowatt-hours in seconds, and the power that would take is no station's)."""
        steps = max(1, round(seconds / every))
        for step in range(1, steps + 1):
            await asyncio.sleep(seconds / steps)
            await self.meter_values(connector_id, transaction_id, wh * step // steps)

    async def fault(self, connector_id: int, error_code: str = "GroundFailure") -> Payload:
        return await self.status(connector_id, "Faulted", error_code)

    def buffer(self, action: str, payload: Payload) -> None:
        """Offline: keep a transaction message to send after the next connect, as stations do."""
        self.buffered.append((action, payload))

    async def flush_buffer(self) -> list[Payload]:
        """Send the buffered messages in order (each with a new message id), returning the answers."""
        answers = []
        while self.buffered:
            action, payload = self.buffered.pop(0)
            answers.append(await self.call(action, payload))
        return answers


async def run_fleet(
    stations: list[SimulatedStation], scenario: Callable[[SimulatedStation], Awaitable[Any]]
) -> list[Any]:
    """Run one scenario on every station at once (a reconnect storm, when the scenario starts with connect)."""
    return list(await asyncio.gather(*(scenario(station) for station in stations)))
