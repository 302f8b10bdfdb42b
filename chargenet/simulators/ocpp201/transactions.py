"""A 2.0.1 station's bookkeeping of one transaction, and the TransactionEvent payloads it writes (no I/O).

The station names its transactions itself (a string); every event of a transaction carries the next `seqNo`
from 0, so the central system can tell a lost one; the idToken, the EVSE and the remote start id are sent once,
the charging state whenever it changed (OCPP 2.0.1 E01-E07, TransactionEventRequest's field notes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Payload = dict[str, Any]

ENERGY = "Energy.Active.Import.Register"
POWER = "Power.Active.Import"

# The trigger of an Ended event for the reason a transaction stopped.
_TRIGGER_OF_STOP = {
    "EVDisconnected": "EVCommunicationLost",
    "Local": "StopAuthorized",
    "Remote": "RemoteStop",
    "ImmediateReset": "ResetCommand",
    "DeAuthorized": "Deauthorized",
    "EnergyLimitReached": "EnergyLimitReached",
    "TimeLimitReached": "TimeLimitReached",
    "SOCLimitReached": "EnergyLimitReached",
    "StoppedByEV": "ChargingStateChanged",
}


@dataclass(frozen=True)
class IdToken:
    value: str
    type: str = "ISO14443"

    def payload(self) -> Payload:
        return {"idToken": self.value, "type": self.type}


def trigger_of_stop(stopped_reason: str) -> str:
    return _TRIGGER_OF_STOP.get(stopped_reason, "AbnormalCondition")


def state_after_stop(stopped_reason: str) -> str:
    """The charging state an Ended event reports: the cable is out only when the EV left."""
    return "Idle" if stopped_reason == "EVDisconnected" else "EVConnected"


def sampled_energy(wh: int, context: str) -> Payload:
    return {"value": wh, "context": context, "measurand": ENERGY, "unitOfMeasure": {"unit": "Wh"}}


def meter_value(timestamp: str, wh: int, context: str, power_w: float | None = None) -> Payload:
    sampled = [sampled_energy(wh, context)]
    if power_w is not None:
        sampled.append({"value": power_w, "context": context, "measurand": POWER, "unitOfMeasure": {"unit": "W"}})
    return {"timestamp": timestamp, "sampledValue": sampled}


@dataclass
class Transaction:
    transaction_id: str
    evse_id: int
    connector_id: int = 1
    id_token: IdToken | None = None
    remote_start_id: int | None = None
    wh: int = 0  # energy delivered so far
    next_seq_no: int = 0
    charging_state: str | None = None  # as last reported
    ended: bool = False
    _token_sent: bool = False
    _remote_start_sent: bool = False

    @property
    def authorized(self) -> bool:
        return self.id_token is not None

    @property
    def token_sent(self) -> bool:
        return self._token_sent

    def event(
        self,
        event_type: str,
        trigger_reason: str,
        timestamp: str,
        *,
        charging_state: str | None = None,
        meter_context: str | None = None,
        power_w: float | None = None,
        stopped_reason: str | None = None,
    ) -> Payload:
        """The next TransactionEvent of this transaction (its seqNo taken), with a meter reading of `self.wh` in
        `meter_context` when given."""
        if self.ended:
            raise ValueError(f"transaction {self.transaction_id} has ended")
        info: Payload = {"transactionId": self.transaction_id}
        if charging_state is not None and charging_state != self.charging_state:
            info["chargingState"] = self.charging_state = charging_state
        if stopped_reason is not None:
            info["stoppedReason"] = stopped_reason
        if self.remote_start_id is not None and not self._remote_start_sent:
            info["remoteStartId"] = self.remote_start_id
            self._remote_start_sent = True
        payload: Payload = {
            "eventType": event_type,
            "timestamp": timestamp,
            "triggerReason": trigger_reason,
            "seqNo": self.next_seq_no,
            "transactionInfo": info,
        }
        if self.next_seq_no == 0:
            payload["evse"] = {"id": self.evse_id, "connectorId": self.connector_id}
        if self.id_token is not None and not self._token_sent:
            payload["idToken"] = self.id_token.payload()
            self._token_sent = True
        if meter_context is not None:
            payload["meterValue"] = [meter_value(timestamp, self.wh, meter_context, power_w)]
        self.next_seq_no += 1
        self.ended = event_type == "Ended"
        return payload
