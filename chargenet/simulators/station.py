"""A simulated OCPP 1.6J charge point: a real WebSocket client, scriptable from tests, the demo and benchmarks.

Its connection, Basic auth and RPC framing are ocppj.py's, shared with the 2.0.1 station (ocpp201/station.py); the
session's story is session.py's. Scenario helpers cover what stations do in the field: plug-first and id-first
charging, faults, and offline periods whose transaction messages are buffered and sent after the reconnect with new
message ids, as real stations do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from chargenet.simulators.charging_profiles import VOLTS, ChargingProfiles16
from chargenet.simulators.log_upload import log_content, upload_log
from chargenet.simulators.ocppj import (
    AnswerWithError,
    CallHandler,
    Payload,
    StationCallError,
    StationConnection,
    now_text,
)
from chargenet.simulators.session import Reading, meter_curve, tell_session

__all__ = [
    "AnswerWithError",
    "CallHandler",
    "Payload",
    "SimulatedStation",
    "StationCallError",
    "default_answers",
    "now_text",
    "run_fleet",
]


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
        "SetChargingProfile": _accepted_profile,
        # The Security Whitepaper's: a station that takes its certificates and holds no CA certificate of a type.
        "CertificateSigned": accepted,
        "InstallCertificate": accepted,
        "DeleteCertificate": lambda _: {"status": "NotFound"},
        "GetInstalledCertificateIds": lambda _: {"status": "NotFound"},
        "ExtendedTriggerMessage": accepted,
    }


def _accepted_profile(_: Payload) -> Payload:
    """Replaced by the station's own profiles when it is built (`SimulatedStation.profiles`)."""
    return {"status": "Accepted"}


@dataclass
class SimulatedStation(StationConnection):
    answers: dict[str, CallHandler] = field(default_factory=default_answers)
    buffered: list[tuple[str, Payload]] = field(default_factory=list)
    # The vehicle on each connector draws up to this, per phase, on `phases` phases, within the profiles it holds.
    max_current_a: float = 32.0
    phases: int = 3
    profiles: ChargingProfiles16 = field(default_factory=ChargingProfiles16)
    log_uploads: list[int] = field(default_factory=list)  # the HTTP status of each log uploaded

    subprotocol: ClassVar[str] = "ocpp1.6"

    def __post_init__(self) -> None:
        if self.answers.get("SetChargingProfile") is _accepted_profile:
            self.answers["SetChargingProfile"] = self.profiles.set
        self.answers.setdefault("ClearChargingProfile", self.profiles.clear)
        self.answers.setdefault("GetDiagnostics", self._get_diagnostics)
        self.answers.setdefault("GetCompositeSchedule", self._composite_schedule)

    def _composite_schedule(self, payload: Payload) -> Payload:
        """What the connector will draw from now: one period, the current its profiles allow its vehicle."""
        connector_id = int(payload["connectorId"])
        unit = payload.get("chargingRateUnit", "A")
        limit = self.current_a(connector_id) if unit == "A" else self.power_w(connector_id)
        schedule = {
            "duration": payload["duration"],
            "chargingRateUnit": unit,
            "chargingSchedulePeriod": [{"startPeriod": 0, "limit": round(limit, 1), "numberPhases": self.phases}],
        }
        return {
            "status": "Accepted",
            "connectorId": connector_id,
            "scheduleStart": now_text(),
            "chargingSchedule": schedule,
        }

    def _get_diagnostics(self, payload: Payload) -> Payload:
        """Names its file, then uploads it to the location (a directory) and tells how that went."""
        file_name = f"diagnostics-{self.station_id}.log"
        self.after_answer(lambda: self._upload_diagnostics(payload["location"], file_name))
        return {"fileName": file_name}

    async def _upload_diagnostics(self, location: str, file_name: str) -> None:
        await self.call("DiagnosticsStatusNotification", {"status": "Uploading"})
        status = await upload_log(location, file_name, log_content(self.station_id, now_text()), self.tls)
        self.log_uploads.append(status)
        outcome = "Uploaded" if 200 <= status < 300 else "UploadFailed"
        await self.call("DiagnosticsStatusNotification", {"status": outcome})

    def current_a(self, connector_id: int) -> float:
        """What the vehicle on the connector draws per phase: its maximum, within the profiles in force."""
        limit = self.profiles.limit_a(connector_id, self.phases)
        return self.max_current_a if limit is None else min(self.max_current_a, limit)

    def power_w(self, connector_id: int) -> float:
        return self.current_a(connector_id) * VOLTS * self.phases

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
        self.profiles.end_transaction(transaction_id)
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
        held = self.profiles.limit_a(connector_id, self.phases) is not None
        if power_w is None and transaction_id is not None and held:
            power_w = self.power_w(connector_id)  # what a vehicle held by a profile draws
        if power_w is not None:
            sampled.append({"value": f"{power_w:g}", "measurand": "Power.Active.Import", "unit": "W"})
        payload: Payload = {
            "connectorId": connector_id,
            "meterValue": [{"timestamp": timestamp or now_text(), "sampledValue": sampled}],
        }
        if transaction_id is not None:
            payload["transactionId"] = transaction_id
        return await self.call("MeterValues", payload)

    async def report_available(self, connectors: int) -> None:
        """Connector 0 (the station) and each connector Available, as after a boot."""
        for connector_id in range(connectors + 1):
            await self.status(connector_id, "Available")

    async def plug_first_session(
        self, connector_id: int, id_tag: str, wh: int = 7000, *, charging_seconds: float = 0.0, meter_every: float = 5.0
    ) -> int:
        """Cable in, then badge: Preparing, Authorize, Start, Charging, MeterValues, Stop, Finishing, Available.
        A session of no duration still reports one reading, half way."""
        readings = meter_curve(wh, charging_seconds, meter_every) or [Reading(0, wh // 2)]
        return await tell_session(
            self, connector_id, id_tag, wh, plug_first=True, readings=readings, stop_reason="EVDisconnected"
        )

    async def id_first_session(
        self, connector_id: int, id_tag: str, wh: int = 7000, *, charging_seconds: float = 0.0, meter_every: float = 5.0
    ) -> int:
        """Badge first, then cable: Authorize, Preparing, Start, Charging, Stop (Local), Finishing, Available."""
        readings = meter_curve(wh, charging_seconds, meter_every)
        return await tell_session(self, connector_id, id_tag, wh, plug_first=False, readings=readings, stop_reason=None)

    # The session's steps in 1.6's messages (session.ChargingSteps) ----------------------------------------

    async def cable_in(self, connector_id: int) -> None:
        await self.status(connector_id, "Preparing")

    async def badge(self, connector_id: int, id_tag: str) -> None:
        await self.authorize(id_tag)

    async def begin(self, connector_id: int, id_tag: str) -> int:
        started = await self.start(connector_id, id_tag, 0)
        await self.status(connector_id, "Charging")
        return int(started["transactionId"])

    async def report(self, connector_id: int, transaction: int, wh: int) -> None:
        await self.meter_values(connector_id, transaction, wh)

    async def end(self, connector_id: int, transaction: int, wh: int, reason: str | None) -> None:
        await self.stop(transaction, wh, reason)
        await self.status(connector_id, "Finishing")

    async def cable_out(self, connector_id: int) -> None:
        await self.status(connector_id, "Available")

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
