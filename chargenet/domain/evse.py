"""How a connector of an EVSE reads in the event model, whichever generation reported it (decisions.md §5).

OCPP 2.0.1 reports a connector as Available, Occupied, Reserved, Unavailable or Faulted, and a transaction's
charging state apart from it (TransactionEvent `chargingState`). The event model speaks 1.6's ChargePointStatus,
so that one session reads the same from both generations. These are the pinned tables, as pure functions.

Rule 1 (derivation): Available, Reserved, Unavailable, Faulted are reported as they are. Occupied reads:
  - without a transaction, or during one whose charging state is Idle or EVConnected before energy flowed:
    Preparing;
  - during a transaction that is Charging, SuspendedEV or SuspendedEVSE: that state;
  - during a transaction that is EVConnected or Idle after energy flowed: SuspendedEV;
  - after the transaction ended, until the connector is reported anything but Occupied: Finishing.
Rule 2 (authorization): 2.0.1's statuses beyond the event model's map `Unknown` -> `Invalid` and `NoCredit`,
  `NotAllowedTypeEVSE`, `NotAtThisLocation`, `NotAtThisTime` -> `Blocked`; the station's own value is kept beside.
Rule 3 (stop reasons): `StoppedByEV` -> `EVDisconnected`, `ImmediateReset` -> `HardReset`, the values both
  generations share as they are, every other -> `Other`; the station's own value is kept beside.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from chargenet.domain.events import AuthorizationStatus, ConnectorStatus, StopReason


class ConnectorState(StrEnum):
    """A connector's own state, as OCPP 2.0.1 reports it (ConnectorStatusEnumType)."""

    AVAILABLE = "Available"
    OCCUPIED = "Occupied"
    RESERVED = "Reserved"
    UNAVAILABLE = "Unavailable"
    FAULTED = "Faulted"


class ChargingState(StrEnum):
    """What the energy transfer of a transaction is doing (ChargingStateEnumType)."""

    CHARGING = "Charging"
    EV_CONNECTED = "EVConnected"
    SUSPENDED_EV = "SuspendedEV"
    SUSPENDED_EVSE = "SuspendedEVSE"
    IDLE = "Idle"


class TransactionPhase(StrEnum):
    NONE = "none"  # no transaction since the connector was last free
    RUNNING = "running"
    ENDED = "ended"  # ended, the connector not yet free again


@dataclass(frozen=True, slots=True)
class EvseConnector:
    """What Rule 1 reads for one connector: what the station last said of the connector and of its transaction."""

    state: ConnectorState | None = None  # None until the station reports it
    phase: TransactionPhase = TransactionPhase.NONE
    charging: ChargingState | None = None
    energy_flowed: bool = False


_AS_REPORTED = {
    ConnectorState.AVAILABLE: ConnectorStatus.AVAILABLE,
    ConnectorState.RESERVED: ConnectorStatus.RESERVED,
    ConnectorState.UNAVAILABLE: ConnectorStatus.UNAVAILABLE,
    ConnectorState.FAULTED: ConnectorStatus.FAULTED,
}

_CHARGING_AS_STATUS = {
    ChargingState.CHARGING: ConnectorStatus.CHARGING,
    ChargingState.SUSPENDED_EV: ConnectorStatus.SUSPENDED_EV,
    ChargingState.SUSPENDED_EVSE: ConnectorStatus.SUSPENDED_EVSE,
}


def derive_status(connector: EvseConnector) -> ConnectorStatus | None:
    """Rule 1; None while there is nothing to say (no state reported and no transaction)."""
    state = connector.state
    if state is None:
        if connector.phase is TransactionPhase.NONE:
            return None
        state = ConnectorState.OCCUPIED  # a transaction ran on it: something was plugged in
    if state is not ConnectorState.OCCUPIED:
        return _AS_REPORTED[state]
    if connector.phase is TransactionPhase.ENDED:
        return ConnectorStatus.FINISHING
    if connector.phase is TransactionPhase.NONE or connector.charging is None:
        return ConnectorStatus.SUSPENDED_EV if connector.energy_flowed else ConnectorStatus.PREPARING
    if connector.charging in _CHARGING_AS_STATUS:
        return _CHARGING_AS_STATUS[connector.charging]
    return ConnectorStatus.SUSPENDED_EV if connector.energy_flowed else ConnectorStatus.PREPARING


def connector_reported(connector: EvseConnector, state: ConnectorState) -> EvseConnector:
    """A StatusNotification: a connector reported free again forgets the transaction that ended on it."""
    if state is ConnectorState.OCCUPIED or connector.phase is TransactionPhase.RUNNING:
        return replace(connector, state=state)
    return EvseConnector(state=state)


def transaction_reported(
    connector: EvseConnector, *, ended: bool, charging: ChargingState | None, energy_flowed: bool
) -> EvseConnector:
    """A TransactionEvent: the charging state it carries (kept when it carries none) and whether energy has flowed
    in the transaction so far."""
    if ended:
        return replace(connector, phase=TransactionPhase.ENDED, charging=None, energy_flowed=False)
    starting = connector.phase is not TransactionPhase.RUNNING
    return replace(
        connector,
        phase=TransactionPhase.RUNNING,
        charging=charging if charging is not None else (None if starting else connector.charging),
        energy_flowed=energy_flowed or (connector.energy_flowed and not starting),
    )


# Rule 2 ----------------------------------------------------------------------------------------------------

_AUTHORIZATION: dict[str, AuthorizationStatus] = {
    **{status.value: status for status in AuthorizationStatus},
    "Unknown": AuthorizationStatus.INVALID,
    "NoCredit": AuthorizationStatus.BLOCKED,
    "NotAllowedTypeEVSE": AuthorizationStatus.BLOCKED,
    "NotAtThisLocation": AuthorizationStatus.BLOCKED,
    "NotAtThisTime": AuthorizationStatus.BLOCKED,
}


@dataclass(frozen=True, slots=True)
class MappedAuthorization:
    status: AuthorizationStatus  # the event model's
    station_status: str | None  # the generation's own value, when it is not the event model's


def map_authorization(station_status: str) -> MappedAuthorization:
    """Rule 2. A value neither table knows is `Invalid` (nobody said the token may charge)."""
    status = _AUTHORIZATION.get(station_status, AuthorizationStatus.INVALID)
    return MappedAuthorization(status, None if station_status == status.value else station_status)


# Rule 3 ----------------------------------------------------------------------------------------------------

_STOP_REASONS: dict[str, StopReason] = {
    **{reason.value: reason for reason in StopReason},
    "StoppedByEV": StopReason.EV_DISCONNECTED,
    "ImmediateReset": StopReason.HARD_RESET,
}


@dataclass(frozen=True, slots=True)
class MappedStopReason:
    reason: StopReason  # the event model's
    station_reason: str | None  # the station's own value, when it is not the event model's


def map_stop_reason(stopped_reason: str | None) -> MappedStopReason:
    """Rule 3. A transaction ended without a reason ended `Local`, as in 1.6 (decisions.md §3)."""
    if stopped_reason is None:
        return MappedStopReason(StopReason.LOCAL, None)
    reason = _STOP_REASONS.get(stopped_reason, StopReason.OTHER)
    return MappedStopReason(reason, None if stopped_reason == reason.value else stopped_reason)
