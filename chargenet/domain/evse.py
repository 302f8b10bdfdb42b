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
Rule 4 (faults): 2.0.1 reports a fault in NotifyEvent, as the variable `Problem` of a component (`Connector`, `EVSE`,
  `ChargingStation`) turning `true`, with a `techCode` and `techInfo`. While it is true the connector reads Faulted,
  whatever else was reported: `errorCode` is the 1.6 name the techCode spells (any case), else `OtherError` with the
  techCode in `info`. Turning `false` again, the connector reads as Rule 1 says; one reported Faulted or never
  reported reads as free again (Occupied during a transaction) until the station says more.
Rule 5 (a new connection): what the link knew of a connector is gone with the connection it had; the status it
  last derived and the transaction still open on the connector say it again, so a station that reconnects in the
  middle of a charge reads as charging, not as a connector just plugged in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from chargenet.domain.events import AuthorizationStatus, ChargePointErrorCode, ConnectorStatus, StopReason


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
class Fault:
    """A problem the station reported (Rule 4), in the event model's words."""

    error_code: ChargePointErrorCode
    info: str | None = None


@dataclass(frozen=True, slots=True)
class EvseConnector:
    """What Rules 1 and 4 read for one connector: what the station last said of the connector, of its
    transaction, and of a problem with it."""

    state: ConnectorState | None = None  # None until the station reports it
    phase: TransactionPhase = TransactionPhase.NONE
    charging: ChargingState | None = None
    energy_flowed: bool = False
    fault: Fault | None = None


@dataclass(frozen=True, slots=True)
class DerivedStatus:
    """A connector's ChargePointStatus as the event model carries it."""

    status: ConnectorStatus
    error_code: ChargePointErrorCode = ChargePointErrorCode.NO_ERROR
    info: str | None = None


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


def derive(connector: EvseConnector) -> DerivedStatus | None:
    """Rules 1 and 4: the status with its error code; None while there is nothing to say."""
    if connector.fault is not None:
        return DerivedStatus(ConnectorStatus.FAULTED, connector.fault.error_code, connector.fault.info)
    status = derive_status(connector)
    if status is None:
        return None
    if status is ConnectorStatus.FAULTED:  # a StatusNotification says Faulted, and not why
        return DerivedStatus(status, ChargePointErrorCode.OTHER_ERROR)
    return DerivedStatus(status)


def derive_status(connector: EvseConnector) -> ConnectorStatus | None:
    """Rule 1 (Rule 4's Faulted first); None while there is nothing to say (no state reported and no
    transaction)."""
    if connector.fault is not None:
        return ConnectorStatus.FAULTED
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
    return EvseConnector(state=state, fault=connector.fault)


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


# Rule 4 ----------------------------------------------------------------------------------------------------

PROBLEM_VARIABLE = "Problem"
_ERROR_CODES = {
    code.value.casefold(): code for code in ChargePointErrorCode if code is not ChargePointErrorCode.NO_ERROR
}
_MAX_INFO = 255  # the event's `info`


def map_fault(tech_code: str | None, tech_info: str | None) -> Fault:
    """Rule 4: the 1.6 error code a techCode names, the techInfo beside it; else `OtherError` with the techCode
    (or, without one, the techInfo) as `info`."""
    named = _ERROR_CODES.get((tech_code or "").strip().casefold())
    if named is not None:
        return Fault(named, tech_info[:_MAX_INFO] if tech_info else None)
    said = tech_code or tech_info
    return Fault(ChargePointErrorCode.OTHER_ERROR, said[:_MAX_INFO] if said else None)


def fault_reported(connector: EvseConnector, fault: Fault | None) -> EvseConnector:
    """Rule 4: a Problem turning true (`fault`) or false (None)."""
    if fault is not None:
        return replace(connector, fault=fault)
    state = connector.state
    if state is None or state is ConnectorState.FAULTED:
        running = connector.phase is TransactionPhase.RUNNING
        state = ConnectorState.OCCUPIED if running else ConnectorState.AVAILABLE
    return replace(connector, state=state, fault=None)


# Rule 5 ----------------------------------------------------------------------------------------------------

_RESTORED_CHARGING = {
    ConnectorStatus.CHARGING: ChargingState.CHARGING,
    ConnectorStatus.SUSPENDED_EV: ChargingState.SUSPENDED_EV,
    ConnectorStatus.SUSPENDED_EVSE: ChargingState.SUSPENDED_EVSE,
}
_RESTORED_STATE = {status: state for state, status in _AS_REPORTED.items()}


def transaction_may_be_open(last: ConnectorStatus | None) -> bool:
    """Rule 5 needs to know of an open transaction only for a connector last read as something a transaction
    shows through: a connector free (or never reported) reads the same with one or without, and a TransactionEvent
    for it says so. Asking only then keeps a reconnect storm of free connectors at one read each."""
    return last not in (None, ConnectorStatus.AVAILABLE, ConnectorStatus.RESERVED)


def restored(
    last: ConnectorStatus | None, error_code: ChargePointErrorCode, info: str | None, *, transaction_open: bool
) -> EvseConnector:
    """Rule 5: what a link starts from for a connector, given the status last written for it and whether a
    transaction is open on it. Energy has flowed in a transaction that read as charging or suspended; a
    SuspendedEV without one that ran is rare enough to read as having charged as well."""
    phase = TransactionPhase.RUNNING if transaction_open else TransactionPhase.NONE
    if last is None:
        return EvseConnector(phase=phase)
    if last is ConnectorStatus.FAULTED and (error_code is not ChargePointErrorCode.OTHER_ERROR or info):
        # A Problem reported (a StatusNotification's Faulted says neither a code nor info): it stays until cleared.
        state = ConnectorState.OCCUPIED if transaction_open else None
        return EvseConnector(state, phase, fault=Fault(error_code, info))
    if last in _RESTORED_STATE:
        return EvseConnector(_RESTORED_STATE[last], phase)
    if last is ConnectorStatus.FINISHING or (last in _RESTORED_CHARGING and not transaction_open):
        return EvseConnector(ConnectorState.OCCUPIED, TransactionPhase.ENDED)
    if not transaction_open:  # Preparing
        return EvseConnector(ConnectorState.OCCUPIED)
    charging = _RESTORED_CHARGING.get(last)
    return EvseConnector(ConnectorState.OCCUPIED, phase, charging, energy_flowed=charging is not None)


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
