"""A simulated OCPP 2.0.1 charging station: a real WebSocket client (subprotocol `ocpp2.0.1`), scriptable from
tests, the demo and benchmarks, beside the 1.6 charge point (simulators/station.py).

It shares that one's connection, Basic auth and RPC framing (ocppj.py) and the story of a session (session.py);
what is 2.0.1's is here: EVSEs of one connector each, TransactionEvents in place of Start/StopTransaction, a
device model in place of a configuration, and answers to the central system's commands that depend on what the
station is doing (a reservation on an EVSE in use is Occupied, a reset during a transaction is Scheduled, ...).
Every payload either way is checked against the 2.0.1 schemas (frames.py) unless `validate` is off.

Offline (`go_offline`), its TransactionEvents are kept with `offline: true` and replayed in order, each with a new
message id, once it is back (`reconnect`); its connectors' statuses that changed meanwhile follow.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from chargenet.simulators.log_upload import log_content, upload_log
from chargenet.simulators.ocpp201 import frames
from chargenet.simulators.ocpp201.charging_profiles import DEFAULT_PHASES, VOLTS, ChargingProfiles
from chargenet.simulators.ocpp201.device_model import DeviceModel, report_parts, standard_variables
from chargenet.simulators.ocpp201.transactions import (
    IdToken,
    Transaction,
    meter_value,
    state_after_stop,
    trigger_of_stop,
)
from chargenet.simulators.ocppj import AnswerWithError, CallHandler, Payload, StationConnection, now_text
from chargenet.simulators.session import Reading, meter_curve, tell_session

log = logging.getLogger(__name__)

CONNECTOR = 1  # every EVSE of the simulated station has one connector


@dataclass
class Reservation:
    evse_id: int
    id_token: IdToken


@dataclass
class SimulatedStation201(StationConnection):
    evse_count: int = 2
    vendor: str = "chargenet"
    model: str = "SimStation201"
    validate: bool = True  # check every payload against the 2.0.1 schemas
    max_power_w: float = 22_000.0
    report_part_size: int = 4  # ReportData entries per NotifyReport
    registration: str | None = None  # the last BootNotification's status
    statuses: dict[int, str] = field(default_factory=dict)  # EVSE -> its connector's status
    operative: dict[int, bool] = field(default_factory=dict)  # EVSE -> available for charging
    transactions: dict[int, Transaction] = field(default_factory=dict)  # EVSE -> its ongoing transaction
    local_list: dict[str, Payload] = field(default_factory=dict)  # idToken value -> idTokenInfo
    local_list_version: int = 0
    auth_cache: dict[str, Payload] = field(default_factory=dict)
    reservations: dict[int, Reservation] = field(default_factory=dict)
    profiles: ChargingProfiles = field(default_factory=ChargingProfiles)
    offline_queue: list[Payload] = field(default_factory=list)  # TransactionEvents kept while offline
    log_uploads: list[int] = field(default_factory=list)  # the HTTP status of each log uploaded
    device_model: DeviceModel = field(init=False)
    _badged: dict[int, IdToken] = field(default_factory=dict)  # EVSE -> the token shown before the cable
    _statuses_unsent: set[int] = field(default_factory=set)
    _reset_when_idle: bool = False
    _inoperative_when_idle: set[int] = field(default_factory=set)

    subprotocol: ClassVar[str] = "ocpp2.0.1"

    def __post_init__(self) -> None:
        self.device_model = DeviceModel(standard_variables(self.station_id, self.model, self.vendor))
        for evse_id in self.evse_ids:
            self.statuses.setdefault(evse_id, "Available")
            self.operative.setdefault(evse_id, True)
        self.answers = {**self.command_answers(), **self.answers}

    @property
    def evse_ids(self) -> range:
        return range(1, self.evse_count + 1)

    @property
    def heartbeat_interval(self) -> int:
        return int(self.device_model.value("OCPPCommCtrlr", "HeartbeatInterval"))

    # Frames ----------------------------------------------------------------------------------------------

    def check_request(self, action: str, payload: Payload) -> None:
        if action not in frames.known_actions():
            raise AnswerWithError("NotImplemented", f"{action} is no OCPP 2.0.1 action")
        if self.validate:
            try:
                frames.check(action, payload, request=True)
            except frames.FrameViolation as violation:
                raise AnswerWithError(violation.code, violation.description) from None

    def check_response(self, action: str, payload: Payload) -> None:
        if self.validate:
            try:
                frames.check(action, payload, request=False)
            except frames.FrameViolation as violation:
                log.error("simulated station %s answered wrongly: %s", self.station_id, violation)
                raise AnswerWithError("InternalError", violation.description) from None

    def check_call(self, action: str, payload: Payload) -> None:
        if self.validate:
            frames.check(action, payload, request=True)

    async def call(self, action: str, payload: Payload | None = None) -> Payload:
        """Send a CALL; the answer is checked too (`frames.FrameViolation` when the central system's is wrong)."""
        answer = await super().call(action, payload)
        if self.validate:
            frames.check(action, answer, request=False)
        return answer

    # Messages --------------------------------------------------------------------------------------------

    async def boot(self, reason: str = "PowerUp") -> Payload:
        """BootNotification; an accepted one sets the heartbeat interval the central system answers."""
        answer = await self.call(
            "BootNotification",
            {"reason": reason, "chargingStation": {"model": self.model, "vendorName": self.vendor}},
        )
        self.registration = answer["status"]
        if answer["status"] == "Accepted":
            self.device_model.put("OCPPCommCtrlr", "HeartbeatInterval", str(answer["interval"]))
        return answer

    async def heartbeat(self) -> Payload:
        return await self.call("Heartbeat")

    async def status(self, evse_id: int, status: str) -> None:
        """The EVSE's connector is `status` now; told at once, or after the reconnect when offline."""
        self.statuses[evse_id] = status
        if not self.connected:
            self._statuses_unsent.add(evse_id)
            return
        await self.call(
            "StatusNotification",
            {"timestamp": now_text(), "connectorStatus": status, "evseId": evse_id, "connectorId": CONNECTOR},
        )

    async def report_available(self, connectors: int) -> None:
        """Each EVSE's connector Available, as after a boot."""
        for evse_id in range(1, connectors + 1):
            await self.status(evse_id, "Available")

    async def authorize(self, token: IdToken) -> Payload:
        """The token's idTokenInfo: the central system's, or offline the local list's or the cache's."""
        if not self.connected:
            if not self.device_model.enabled("AuthCtrlr", "LocalAuthorizeOffline"):
                return {"status": "Unknown"}
            return self.local_list.get(token.value) or self.auth_cache.get(token.value) or {"status": "Unknown"}
        answer = await self.call("Authorize", {"idToken": token.payload()})
        info: Payload = answer["idTokenInfo"]
        if self.device_model.enabled("AuthCacheCtrlr", "Enabled"):
            self.auth_cache[token.value] = info
        return info

    async def meter_values(self, evse_id: int, context: str = "Sample.Periodic") -> Payload:
        transaction = self.transactions.get(evse_id)
        wh = transaction.wh if transaction is not None else 0
        return await self.call(
            "MeterValues",
            {"evseId": evse_id, "meterValue": [meter_value(now_text(), wh, context, self.power_w(evse_id))]},
        )

    def power_w(self, evse_id: int) -> float | None:
        """The power the EVSE's charging profiles allow it now, within the station's own; None without one."""
        limit = self.profiles.limit_w(evse_id)
        return None if limit is None else min(limit, self.max_power_w)

    async def transaction_event(
        self,
        transaction: Transaction,
        event_type: str,
        trigger_reason: str,
        *,
        charging_state: str | None = None,
        meter_context: str | None = None,
        stopped_reason: str | None = None,
    ) -> Payload:
        """The transaction's next TransactionEvent, sent, or kept with `offline: true` while offline."""
        power = self.power_w(transaction.evse_id) if meter_context is not None else None
        payload = transaction.event(
            event_type,
            trigger_reason,
            now_text(),
            charging_state=charging_state,
            meter_context=meter_context,
            power_w=power,
            stopped_reason=stopped_reason,
        )
        if not self.connected or self.offline_queue:
            payload["offline"] = True
            self.offline_queue.append(payload)
            return payload
        await self.call("TransactionEvent", payload)
        return payload

    # Offline ---------------------------------------------------------------------------------------------

    async def go_offline(self) -> None:
        """The link is lost: transaction events are kept from now on."""
        await self.close()

    async def reconnect(self) -> list[Payload]:
        """Connect again, replay the kept TransactionEvents in order, then the statuses that changed meanwhile;
        returns the answers to the replayed events."""
        await self.connect()
        answers = []
        while self.offline_queue:
            answers.append(await self.call("TransactionEvent", self.offline_queue[0]))
            self.offline_queue.pop(0)
        unsent, self._statuses_unsent = sorted(self._statuses_unsent), set()
        for evse_id in unsent:
            await self.status(evse_id, self.statuses[evse_id])
        return answers

    # Sessions (session.DemoStation) ----------------------------------------------------------------------

    async def plug_first_session(
        self, connector_id: int, id_tag: str, wh: int = 7000, *, charging_seconds: float = 0.0, meter_every: float = 5.0
    ) -> str:
        """Cable in (Occupied, Started), badge (Authorize), Updated Charging, Updated readings, Ended
        (EVDisconnected), Available; `connector_id` is the EVSE. A session of no duration reports one reading."""
        readings = meter_curve(wh, charging_seconds, meter_every) or [Reading(0, wh // 2)]
        transaction = await tell_session(
            self, connector_id, id_tag, wh, plug_first=True, readings=readings, stop_reason="EVDisconnected"
        )
        return transaction.transaction_id

    async def id_first_session(
        self, connector_id: int, id_tag: str, wh: int = 7000, *, charging_seconds: float = 0.0, meter_every: float = 5.0
    ) -> str:
        """Badge (Authorize), cable in (Occupied, Started with the idToken), Updated Charging, Updated readings,
        Ended (Local), Available."""
        readings = meter_curve(wh, charging_seconds, meter_every) or [Reading(0, wh // 2)]
        transaction = await tell_session(
            self, connector_id, id_tag, wh, plug_first=False, readings=readings, stop_reason="Local"
        )
        return transaction.transaction_id

    # The session's steps in 2.0.1's messages (session.ChargingSteps) --------------------------------------

    def open_transaction(
        self, evse_id: int, id_token: IdToken | None, remote_start_id: int | None = None
    ) -> Transaction:
        transaction = Transaction(str(uuid.uuid4()), evse_id, CONNECTOR, id_token, remote_start_id)
        self.transactions[evse_id] = transaction
        reservation = next((r for r, v in self.reservations.items() if v.evse_id == evse_id), None)
        if reservation is not None and id_token is not None and self.reservations[reservation].id_token == id_token:
            del self.reservations[reservation]
        return transaction

    async def cable_in(self, connector_id: int) -> None:
        await self.status(connector_id, "Occupied")
        if connector_id not in self.transactions:
            transaction = self.open_transaction(connector_id, self._badged.pop(connector_id, None))
            await self.transaction_event(
                transaction,
                "Started",
                "CablePluggedIn",
                charging_state="EVConnected",
                meter_context="Transaction.Begin",
            )

    async def badge(self, connector_id: int, id_tag: str) -> None:
        token = IdToken(id_tag)
        await self.authorize(token)
        transaction = self.transactions.get(connector_id)
        if transaction is None:
            self._badged[connector_id] = token
        elif transaction.id_token is None:
            transaction.id_token = token

    async def begin(self, connector_id: int, id_tag: str) -> Transaction:
        transaction = self.transactions[connector_id]
        # When the cable came first, this event carries the token the driver showed since.
        trigger = "ChargingStateChanged" if transaction.token_sent else "Authorized"
        await self.transaction_event(
            transaction, "Updated", trigger, charging_state="Charging", meter_context="Sample.Periodic"
        )
        return transaction

    async def report(self, connector_id: int, transaction: Transaction, wh: int) -> None:
        transaction.wh = wh
        await self.transaction_event(transaction, "Updated", "MeterValuePeriodic", meter_context="Sample.Periodic")

    async def end(self, connector_id: int, transaction: Transaction, wh: int, reason: str | None) -> None:
        transaction.wh = wh
        await self.stop_transaction(transaction, reason or "Local")

    async def cable_out(self, connector_id: int) -> None:
        await self.status(connector_id, self.idle_status(connector_id))
        if self._reset_when_idle and not self.transactions:
            self._reset_when_idle = False
            await self.reboot()

    async def stop_transaction(self, transaction: Transaction, stopped_reason: str) -> None:
        """Ended, with the energy so far; an EVSE made inoperative meanwhile is so now (a scheduled reset waits
        for the cable to be out)."""
        evse_id = transaction.evse_id
        await self.transaction_event(
            transaction,
            "Ended",
            trigger_of_stop(stopped_reason),
            charging_state=state_after_stop(stopped_reason),
            meter_context="Transaction.End",
            stopped_reason=stopped_reason,
        )
        del self.transactions[evse_id]
        self.profiles.end_transaction(evse_id)
        if evse_id in self._inoperative_when_idle:
            self._inoperative_when_idle.discard(evse_id)
            self.operative[evse_id] = False

    def idle_status(self, evse_id: int) -> str:
        """The connector's status with no cable in."""
        if not self.operative[evse_id]:
            return "Unavailable"
        if any(r.evse_id == evse_id for r in self.reservations.values()):
            return "Reserved"
        return "Available"

    async def reboot(self) -> None:
        """End every transaction (ImmediateReset), reconnect, boot (RemoteReset) and report every connector."""
        for transaction in list(self.transactions.values()):
            await self.stop_transaction(transaction, "ImmediateReset")
        await self.close()
        await self.connect()
        await self.boot("RemoteReset")
        for evse_id in self.evse_ids:
            await self.status(evse_id, self.idle_status(evse_id))

    # Answers to the central system -----------------------------------------------------------------------

    def command_answers(self) -> dict[str, CallHandler]:
        return {
            "RequestStartTransaction": self._request_start,
            "RequestStopTransaction": self._request_stop,
            "Reset": self._reset,
            "UnlockConnector": self._unlock,
            "ChangeAvailability": self._change_availability,
            "TriggerMessage": self._trigger,
            "GetVariables": lambda p: {"getVariableResult": [self.device_model.get(e) for e in p["getVariableData"]]},
            "SetVariables": lambda p: {"setVariableResult": [self.device_model.set(e) for e in p["setVariableData"]]},
            "GetBaseReport": self._base_report,
            "SendLocalList": self._send_local_list,
            "GetLocalListVersion": lambda _: {"versionNumber": self.local_list_version},
            "ClearCache": self._clear_cache,
            "ReserveNow": self._reserve,
            "CancelReservation": self._cancel_reservation,
            "DataTransfer": self._data_transfer,
            "SetChargingProfile": self._set_charging_profile,
            "ClearChargingProfile": self._clear_charging_profile,
            "GetCompositeSchedule": self._composite_schedule,
            "GetLog": self._get_log,
        }

    def _get_log(self, payload: Payload) -> Payload:
        """Accepts, then uploads its file to the location (a directory) and tells how that went."""
        file_name = f"{payload['logType']}-{self.station_id}.log"
        request_id = payload["requestId"]
        self.after_answer(lambda: self._upload_log(payload["log"]["remoteLocation"], file_name, request_id))
        return {"status": "Accepted", "filename": file_name}

    async def _upload_log(self, location: str, file_name: str, request_id: int) -> None:
        await self.call("LogStatusNotification", {"status": "Uploading", "requestId": request_id})
        status = await upload_log(location, file_name, log_content(self.station_id, now_text()), self.tls)
        self.log_uploads.append(status)
        outcome = "Uploaded" if 200 <= status < 300 else "UploadFailure"
        await self.call("LogStatusNotification", {"status": outcome, "requestId": request_id})

    def _can_charge(self, evse_id: int, token: IdToken) -> bool:
        if evse_id not in self.evse_ids or not self.operative[evse_id]:
            return False
        if self.statuses[evse_id] in ("Faulted", "Unavailable"):
            return False
        reserved = [r for r in self.reservations.values() if r.evse_id == evse_id]
        return all(r.id_token == token for r in reserved)

    def _request_start(self, payload: Payload) -> Payload:
        token = IdToken(payload["idToken"]["idToken"], payload["idToken"]["type"])
        evse_id = payload.get("evseId") or next(
            (e for e in self.evse_ids if e not in self.transactions and self._can_charge(e, token)), 0
        )
        transaction = self.transactions.get(evse_id)
        profile = payload.get("chargingProfile")
        if (
            not self._can_charge(evse_id, token)
            or (transaction is not None and transaction.authorized)
            or (profile is not None and profile["chargingProfilePurpose"] != "TxProfile")
        ):
            return {"status": "Rejected"}
        self.after_answer(lambda: self._remote_start(evse_id, token, payload["remoteStartId"], profile))
        answer: Payload = {"status": "Accepted"}
        if transaction is not None:
            answer["transactionId"] = transaction.transaction_id
        return answer

    async def _remote_start(self, evse_id: int, token: IdToken, remote_start_id: int, profile: Payload | None) -> None:
        """The EV is plugged in already (or just now): the transaction charges at once."""
        transaction = self.transactions.get(evse_id)
        if transaction is None:
            await self.status(evse_id, "Occupied")
            transaction = self.open_transaction(evse_id, token, remote_start_id)
            event_type, meter_context = "Started", "Transaction.Begin"
        else:
            transaction.id_token, transaction.remote_start_id = token, remote_start_id
            event_type, meter_context = "Updated", "Sample.Periodic"
        if profile is not None:
            self.profiles.keep(evse_id, {**profile, "transactionId": transaction.transaction_id})
        await self.transaction_event(
            transaction, event_type, "RemoteStart", charging_state="Charging", meter_context=meter_context
        )

    def _request_stop(self, payload: Payload) -> Payload:
        transaction = next(
            (t for t in self.transactions.values() if t.transaction_id == payload["transactionId"]), None
        )
        if transaction is None:
            return {"status": "Rejected"}

        async def stop_and_leave() -> None:
            await self.stop_transaction(transaction, "Remote")
            await self.cable_out(transaction.evse_id)

        self.after_answer(stop_and_leave)
        return {"status": "Accepted"}

    def _reset(self, payload: Payload) -> Payload:
        if "evseId" in payload:
            return {"status": "Rejected"}  # the station resets as a whole only
        if payload["type"] == "OnIdle" and self.transactions:
            self._reset_when_idle = True
            return {"status": "Scheduled"}
        self.after_answer(self.reboot)
        return {"status": "Accepted"}

    def _unlock(self, payload: Payload) -> Payload:
        if payload["evseId"] not in self.evse_ids or payload["connectorId"] != CONNECTOR:
            return {"status": "UnknownConnector"}
        if payload["evseId"] in self.transactions:
            return {"status": "OngoingAuthorizedTransaction"}
        return {"status": "Unlocked"}

    def _change_availability(self, payload: Payload) -> Payload:
        evse = payload.get("evse")
        if evse is not None and (
            evse["id"] not in (0, *self.evse_ids) or evse.get("connectorId", CONNECTOR) != CONNECTOR
        ):
            return {"status": "Rejected"}
        targets = list(self.evse_ids) if evse is None or evse["id"] == 0 else [evse["id"]]
        operative = payload["operationalStatus"] == "Operative"
        busy = [e for e in targets if e in self.transactions]
        now = targets if operative else [e for e in targets if e not in busy]
        for evse_id in now:
            self.operative[evse_id] = operative
            self._inoperative_when_idle.discard(evse_id)
        if not operative:
            self._inoperative_when_idle |= set(busy)

        async def tell() -> None:
            for evse_id in now:
                if evse_id not in self.transactions:
                    await self.status(evse_id, self.idle_status(evse_id))

        self.after_answer(tell)
        return {"status": "Scheduled" if busy and not operative else "Accepted"}

    def _trigger(self, payload: Payload) -> Payload:
        requested, evse = payload["requestedMessage"], payload.get("evse")
        if evse is not None and evse["id"] not in self.evse_ids:
            return {"status": "Rejected"}
        targets = [evse["id"]] if evse is not None else list(self.evse_ids)
        if requested == "BootNotification":
            if self.registration == "Accepted":
                return {"status": "Rejected"}  # F06.FR.17: an accepted station does not boot again on demand
            self.after_answer(lambda: self.boot("Triggered"))
        elif requested == "Heartbeat":
            self.after_answer(self.heartbeat)
        elif requested == "StatusNotification":
            if evse is None or "connectorId" not in evse:
                return {"status": "Rejected"}
            self.after_answer(lambda: self.status(evse["id"], self.statuses[evse["id"]]))
        elif requested == "MeterValues":

            async def meter() -> None:
                for evse_id in targets:
                    await self.meter_values(evse_id, "Trigger")

            self.after_answer(meter)
        elif requested == "TransactionEvent":
            ongoing = [self.transactions[e] for e in targets if e in self.transactions]
            if not ongoing:
                return {"status": "Rejected"}

            async def events() -> None:
                for transaction in ongoing:
                    await self.transaction_event(transaction, "Updated", "Trigger", meter_context="Trigger")

            self.after_answer(events)
        else:
            return {"status": "NotImplemented"}
        return {"status": "Accepted"}

    def _base_report(self, payload: Payload) -> Payload:
        report = self.device_model.report(payload["reportBase"])
        if report is None:
            return {"status": "NotSupported"}
        parts = report_parts(report, self.report_part_size)

        async def notify() -> None:
            generated_at = now_text()
            for seq_no, part in enumerate(parts):
                notice: Payload = {
                    "requestId": payload["requestId"],
                    "generatedAt": generated_at,
                    "seqNo": seq_no,
                    "tbc": seq_no < len(parts) - 1,
                }
                if part:
                    notice["reportData"] = part
                await self.call("NotifyReport", notice)

        self.after_answer(notify)
        return {"status": "Accepted"}

    def _send_local_list(self, payload: Payload) -> Payload:
        if not self.device_model.enabled("LocalAuthListCtrlr", "Enabled"):
            return {"status": "Failed"}
        version, differential = payload["versionNumber"], payload["updateType"] == "Differential"
        if differential and version <= self.local_list_version:
            return {"status": "VersionMismatch"}
        entries = dict(self.local_list) if differential else {}
        for entry in payload.get("localAuthorizationList", []):
            value = entry["idToken"]["idToken"]
            if "idTokenInfo" in entry:
                entries[value] = entry["idTokenInfo"]
            else:
                entries.pop(value, None)
        self.local_list, self.local_list_version = entries, version
        return {"status": "Accepted"}

    def _clear_cache(self, _: Payload) -> Payload:
        if not self.device_model.enabled("AuthCacheCtrlr", "Enabled"):
            return {"status": "Rejected"}
        self.auth_cache.clear()
        return {"status": "Accepted"}

    def _reserve(self, payload: Payload) -> Payload:
        token = IdToken(payload["idToken"]["idToken"], payload["idToken"]["type"])
        evse_id = payload.get("evseId") or next(
            (e for e in self.evse_ids if self.statuses[e] == "Available" and self.operative[e]), self.evse_ids[0]
        )
        if evse_id not in self.evse_ids:
            return {"status": "Rejected"}
        if not self.operative[evse_id] or self.statuses[evse_id] == "Unavailable":
            return {"status": "Unavailable"}
        if self.statuses[evse_id] == "Faulted":
            return {"status": "Faulted"}
        taken = any(r.evse_id == evse_id for i, r in self.reservations.items() if i != payload["id"])
        if evse_id in self.transactions or self.statuses[evse_id] == "Occupied" or taken:
            return {"status": "Occupied"}
        self.reservations[payload["id"]] = Reservation(evse_id, token)
        self.after_answer(lambda: self.status(evse_id, "Reserved"))
        return {"status": "Accepted"}

    def _cancel_reservation(self, payload: Payload) -> Payload:
        reservation = self.reservations.pop(payload["reservationId"], None)
        if reservation is None:
            return {"status": "Rejected"}
        if reservation.evse_id not in self.transactions:
            self.after_answer(lambda: self.status(reservation.evse_id, self.idle_status(reservation.evse_id)))
        return {"status": "Accepted"}

    def _data_transfer(self, payload: Payload) -> Payload:
        if payload["vendorId"] != self.vendor:
            return {"status": "UnknownVendorId"}
        if payload.get("messageId") != "Echo":
            return {"status": "UnknownMessageId"}
        answer: Payload = {"status": "Accepted"}
        if "data" in payload:
            answer["data"] = payload["data"]
        return answer

    def _set_charging_profile(self, payload: Payload) -> Payload:
        evse_id, profile = payload["evseId"], payload["chargingProfile"]
        purpose = profile["chargingProfilePurpose"]
        if evse_id not in (0, *self.evse_ids) or purpose == "ChargingStationExternalConstraints":
            return {"status": "Rejected"}
        if purpose == "ChargingStationMaxProfile" and evse_id != 0:
            return {"status": "Rejected"}
        if purpose == "TxProfile":
            transaction = self.transactions.get(evse_id)
            if transaction is None or profile.get("transactionId", transaction.transaction_id) != (
                transaction.transaction_id
            ):
                return {"status": "Rejected"}
        self.profiles.keep(evse_id, profile)
        return {"status": "Accepted"}

    def _clear_charging_profile(self, payload: Payload) -> Payload:
        return {"status": "Accepted" if self.profiles.clear(payload) else "Unknown"}

    def _composite_schedule(self, payload: Payload) -> Payload:
        """What the EVSE will draw from now: one period, the limit its profiles allow it (K08)."""
        evse_id = payload["evseId"]
        power_w = self.power_w(evse_id) if evse_id in self.evse_ids else None
        if power_w is None:
            return {"status": "Rejected"}
        unit = payload.get("chargingRateUnit", "W")
        limit = power_w if unit == "W" else power_w / (VOLTS * DEFAULT_PHASES)
        schedule = {
            "evseId": evse_id,
            "duration": payload["duration"],
            "scheduleStart": now_text(),
            "chargingRateUnit": unit,
            "chargingSchedulePeriod": [{"startPeriod": 0, "limit": round(limit, 1)}],
        }
        return {"status": "Accepted", "schedule": schedule}
