"""OCPP 2.0.1 payloads read into the core's typed records. Each payload was validated against its 2.0.1 schema
first (`ocpp201.frames.check_call`), so the fields the schema requires are there with their types.

A 2.0.1 meter value is numeric and names its measurand, context and unit (`unitOfMeasure`, with a power-of-ten
`multiplier`); the energy the events carry is the Outlet's `Energy.Active.Import.Register` (the default
measurand), in Wh, without a phase, as 1.6's is (`ocpp16.meter_values`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from chargenet.domain.connectors import KnownStatus
from chargenet.domain.events import AuthorizationStatus
from chargenet.domain.evse import (
    PROBLEM_VARIABLE,
    ChargingState,
    ConnectorState,
    DerivedStatus,
    Fault,
    map_fault,
    map_stop_reason,
)
from chargenet.domain.tenants import ConnectorAddress, StationLayout, locate_evse_connector, ocpp_connector_id
from chargenet.edge.core.authorize import UpstreamVerdict
from chargenet.edge.core.messages import (
    ConnectorRef,
    IdToken,
    StationBooted,
    TokenPresented,
    TransactionEventKind,
    TransactionReport,
)
from chargenet.edge.ocpp16.frames import Payload
from chargenet.edge.ocpp16.meter_values import MAX_ENERGY_WH, Reported
from chargenet.errors import InvalidInput

ENERGY = "Energy.Active.Import.Register"
POWER = "Power.Active.Import"
_ENERGY_UNITS = {"Wh": Decimal(1), "kWh": Decimal(1000)}
_POWER_UNITS = {"W": Decimal(1), "kW": Decimal(1000)}
NO_AUTHORIZATION = "NoAuthorization"


def connector(layout: StationLayout, evse_id: int, connector_id: int | None) -> ConnectorRef:
    """Raises `InvalidInput` (PropertyConstraintViolation) for an EVSE or connector the station was never given."""
    address = locate_evse_connector(layout, evse_id, connector_id)
    return ConnectorRef(address, ocpp_connector_id(layout, address))


def id_token(token: Payload) -> IdToken:
    """decisions.md §5 "idTokens": the value is what events carry as `idTag`; an empty one (NoAuthorization) reads
    `NoAuthorization`."""
    value = token["idToken"] or NO_AUTHORIZATION
    return IdToken(value, token["type"])


def station_booted(payload: Payload) -> StationBooted:
    station = payload["chargingStation"]
    return StationBooted(station.get("vendorName"), station.get("model"), station.get("firmwareVersion"))


@dataclass(frozen=True, slots=True)
class ConnectorReport:
    """A 2.0.1 StatusNotification: the connector's own state, not yet the event model's status."""

    connector: ConnectorRef
    state: ConnectorState
    timestamp: datetime


def connector_report(layout: StationLayout, payload: Payload) -> ConnectorReport:
    return ConnectorReport(
        connector(layout, payload["evseId"], payload["connectorId"]),
        ConnectorState(payload["connectorStatus"]),
        datetime.fromisoformat(payload["timestamp"]),
    )


def known_status(derived: DerivedStatus, timestamp: datetime) -> KnownStatus:
    """A derived status as the status table keeps it."""
    return KnownStatus(derived.status, derived.error_code, derived.info, timestamp)


@dataclass(frozen=True, slots=True)
class ProblemReport:
    """A NotifyEvent's `Problem` of a connector, an EVSE (its connector 0) or the whole station (the first
    EVSE's connector 0, as 1.6's connector 0): a fault while true, None once false again."""

    connector: ConnectorRef
    fault: Fault | None
    timestamp: datetime


_BOOLEANS = {"true": True, "false": False}


def _problem_connector(layout: StationLayout, component: Payload) -> ConnectorRef | None:
    name, evse = component["name"], component.get("evse")
    if name == "ChargingStation":
        return connector(layout, 0, None)
    if evse is None or name not in {"Connector", "EVSE"}:
        return None
    if name == "Connector":
        return connector(layout, evse["id"], evse.get("connectorId"))
    whole = locate_evse_connector(layout, evse["id"], None)
    return ConnectorRef(ConnectorAddress(whole.charge_point_id, 0), 0)


def problems(layout: StationLayout, payload: Payload) -> list[ProblemReport]:
    """The Problems a NotifyEvent reports, in its order. One of an EVSE or connector the station was never given
    is left out: the notice is kept all the same."""
    found = []
    for data in payload["eventData"]:
        value = _BOOLEANS.get(str(data.get("actualValue", "")).strip().lower())
        if data["variable"]["name"] != PROBLEM_VARIABLE or value is None:
            continue
        try:
            where = _problem_connector(layout, data["component"])
        except InvalidInput:
            continue
        if where is None:
            continue
        fault = map_fault(data.get("techCode"), data.get("techInfo")) if value else None
        found.append(ProblemReport(where, fault, datetime.fromisoformat(data["timestamp"])))
    return found


def token_presented(payload: Payload) -> TokenPresented:
    return TokenPresented(id_token(payload["idToken"]))


def _number(sampled: Payload, units: dict[str, Decimal], default_unit: str) -> Decimal | None:
    unit_of_measure = sampled.get("unitOfMeasure") or {}
    scale = units.get(unit_of_measure.get("unit", default_unit))
    if scale is None:
        return None
    try:
        value = Decimal(str(sampled["value"])) * scale * Decimal(10) ** int(unit_of_measure.get("multiplier", 0))
    except (ArithmeticError, ValueError):  # a multiplier no Decimal holds: no reading
        return None
    return value if value.is_finite() else None


def _is_outlet_total(sampled: Payload, measurand: str) -> bool:
    return (
        sampled.get("measurand", ENERGY) == measurand
        and "phase" not in sampled
        and sampled.get("location", "Outlet") == "Outlet"
    )


@dataclass(frozen=True, slots=True)
class EnergyReading:
    at: datetime
    context: str
    energy_wh: int
    power_w: float | None


def energy_readings(meter_values: Any) -> list[EnergyReading]:
    """The Outlet's energy register readings of a list of MeterValueType, in the order the station sent them."""
    found: list[EnergyReading] = []
    for meter_value in meter_values or []:
        at = datetime.fromisoformat(meter_value["timestamp"]).astimezone(UTC)
        energy: Decimal | None = None
        power: Decimal | None = None
        context = "Sample.Periodic"
        for sampled in meter_value["sampledValue"]:
            if energy is None and _is_outlet_total(sampled, ENERGY):
                energy = _number(sampled, _ENERGY_UNITS, "Wh")
                context = sampled.get("context", "Sample.Periodic")
            if power is None and _is_outlet_total(sampled, POWER):
                power = _number(sampled, _POWER_UNITS, "W")
        if energy is not None and 0 <= energy <= MAX_ENERGY_WH:
            power_w = None if power is None else float(power)
            found.append(EnergyReading(at, context, int(energy.to_integral_value()), power_w))
    return found


def samples(readings: list[EnergyReading]) -> list[Reported]:
    """Readings as the message log keeps them for a session's chart."""
    return [Reported(reading.at, reading.energy_wh, reading.power_w) for reading in readings]


def _first_of(readings: list[EnergyReading], context: str) -> int | None:
    return next((reading.energy_wh for reading in readings if reading.context == context), None)


def transaction_report(layout: StationLayout, payload: Payload) -> TransactionReport:
    """TransactionEvent. Raises `InvalidInput` for an EVSE or connector the station was never given."""
    info = payload["transactionInfo"]
    evse = payload.get("evse")
    if evse is not None and evse["id"] == 0:
        raise InvalidInput("a transaction runs on an EVSE numbered from 1; 0 is the whole station", field="evse/id")
    where = connector(layout, evse["id"], evse.get("connectorId")) if evse is not None else None
    readings = energy_readings(payload.get("meterValue"))
    kind = TransactionEventKind(payload["eventType"])
    charging = info.get("chargingState")
    token = payload.get("idToken")
    return TransactionReport(
        kind=kind,
        station_transaction_id=info["transactionId"],
        seq_no=payload["seqNo"],
        timestamp=datetime.fromisoformat(payload["timestamp"]),
        trigger=payload["triggerReason"],
        offline=payload.get("offline", False),
        connector=where,
        token=id_token(token) if token is not None else None,
        charging=ChargingState(charging) if charging is not None else None,
        stopped=map_stop_reason(info.get("stoppedReason")) if kind is TransactionEventKind.ENDED else None,
        meter_begin_wh=_first_of(readings, "Transaction.Begin"),
        meter_end_wh=_first_of(readings, "Transaction.End"),
        meter_first_wh=readings[0].energy_wh if readings else None,
        meter_last_wh=readings[-1].energy_wh if readings else None,
        reservation_id=payload.get("reservationId"),
        remote_start_id=info.get("remoteStartId"),
    )


def upstream_verdict(id_token_info: Payload) -> UpstreamVerdict:
    """A 2.0.1 upstream's IdTokenInfo (in its Authorize answer). A status the edge's events do not have (NoCredit,
    NotAtThisLocation, ...) is Invalid to the edge; the station still gets the upstream's answer as it came."""
    try:
        status = AuthorizationStatus(id_token_info["status"])
    except ValueError:
        status = AuthorizationStatus.INVALID
    expiry = id_token_info.get("cacheExpiryDateTime")
    group = id_token_info.get("groupIdToken")
    return UpstreamVerdict(
        status,
        datetime.fromisoformat(expiry) if expiry else None,
        group.get("idToken") if isinstance(group, dict) else None,
    )
