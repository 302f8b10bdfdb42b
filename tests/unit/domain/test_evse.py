"""decisions.md §5 "Events from 2.0.1": the derived ChargePointStatus and the mapped statuses and stop reasons."""

from __future__ import annotations

import pytest

from chargenet.domain.events import AuthorizationStatus, ChargePointErrorCode, ConnectorStatus, StopReason
from chargenet.domain.evse import (
    ChargingState,
    ConnectorState,
    DerivedStatus,
    EvseConnector,
    Fault,
    TransactionPhase,
    connector_reported,
    derive,
    derive_status,
    fault_reported,
    map_authorization,
    map_fault,
    map_stop_reason,
    restored,
    transaction_may_be_open,
    transaction_reported,
)

OCCUPIED = ConnectorState.OCCUPIED
RUNNING = TransactionPhase.RUNNING


@pytest.mark.parametrize(
    ("connector", "derived"),
    [
        (EvseConnector(ConnectorState.AVAILABLE), ConnectorStatus.AVAILABLE),
        (EvseConnector(ConnectorState.RESERVED), ConnectorStatus.RESERVED),
        (EvseConnector(ConnectorState.UNAVAILABLE, RUNNING), ConnectorStatus.UNAVAILABLE),
        (EvseConnector(ConnectorState.FAULTED, RUNNING, ChargingState.CHARGING), ConnectorStatus.FAULTED),
        (EvseConnector(OCCUPIED), ConnectorStatus.PREPARING),
        (EvseConnector(OCCUPIED, RUNNING, ChargingState.EV_CONNECTED), ConnectorStatus.PREPARING),
        (EvseConnector(OCCUPIED, RUNNING, ChargingState.IDLE), ConnectorStatus.PREPARING),
        (EvseConnector(OCCUPIED, RUNNING, None), ConnectorStatus.PREPARING),
        (EvseConnector(OCCUPIED, RUNNING, ChargingState.CHARGING), ConnectorStatus.CHARGING),
        (EvseConnector(OCCUPIED, RUNNING, ChargingState.SUSPENDED_EV), ConnectorStatus.SUSPENDED_EV),
        (EvseConnector(OCCUPIED, RUNNING, ChargingState.SUSPENDED_EVSE), ConnectorStatus.SUSPENDED_EVSE),
        (EvseConnector(OCCUPIED, RUNNING, ChargingState.EV_CONNECTED, True), ConnectorStatus.SUSPENDED_EV),
        (EvseConnector(OCCUPIED, RUNNING, ChargingState.IDLE, True), ConnectorStatus.SUSPENDED_EV),
        (EvseConnector(OCCUPIED, TransactionPhase.ENDED), ConnectorStatus.FINISHING),
        (EvseConnector(None, RUNNING, ChargingState.CHARGING), ConnectorStatus.CHARGING),
        (EvseConnector(None, TransactionPhase.ENDED), ConnectorStatus.FINISHING),
        (EvseConnector(None), None),
    ],
)
def test_the_derived_status_follows_the_pinned_table(connector: EvseConnector, derived: ConnectorStatus) -> None:
    assert derive_status(connector) == derived


def test_one_session_reads_as_a_16_session_does() -> None:
    seen = []
    connector = connector_reported(EvseConnector(), ConnectorState.AVAILABLE)
    seen.append(derive_status(connector))
    connector = connector_reported(connector, OCCUPIED)
    seen.append(derive_status(connector))
    connector = transaction_reported(connector, ended=False, charging=ChargingState.EV_CONNECTED, energy_flowed=False)
    seen.append(derive_status(connector))
    connector = transaction_reported(connector, ended=False, charging=ChargingState.CHARGING, energy_flowed=True)
    seen.append(derive_status(connector))
    connector = transaction_reported(connector, ended=False, charging=ChargingState.EV_CONNECTED, energy_flowed=False)
    seen.append(derive_status(connector))
    connector = transaction_reported(connector, ended=True, charging=None, energy_flowed=False)
    seen.append(derive_status(connector))
    connector = connector_reported(connector, ConnectorState.AVAILABLE)
    seen.append(derive_status(connector))
    assert seen == [
        ConnectorStatus.AVAILABLE,
        ConnectorStatus.PREPARING,
        ConnectorStatus.PREPARING,
        ConnectorStatus.CHARGING,
        ConnectorStatus.SUSPENDED_EV,
        ConnectorStatus.FINISHING,
        ConnectorStatus.AVAILABLE,
    ]


def test_a_connector_free_again_forgets_the_ended_transaction() -> None:
    connector = EvseConnector(OCCUPIED, TransactionPhase.ENDED)
    connector = connector_reported(connector_reported(connector, ConnectorState.AVAILABLE), OCCUPIED)
    assert derive_status(connector) is ConnectorStatus.PREPARING


def test_a_new_transaction_starts_without_the_last_ones_energy() -> None:
    connector = EvseConnector(OCCUPIED, TransactionPhase.ENDED, None, False)
    connector = transaction_reported(connector, ended=False, charging=ChargingState.EV_CONNECTED, energy_flowed=False)
    assert derive_status(connector) is ConnectorStatus.PREPARING


@pytest.mark.parametrize(
    ("station_status", "status", "kept"),
    [
        ("Accepted", AuthorizationStatus.ACCEPTED, None),
        ("Blocked", AuthorizationStatus.BLOCKED, None),
        ("ConcurrentTx", AuthorizationStatus.CONCURRENT_TX, None),
        ("Expired", AuthorizationStatus.EXPIRED, None),
        ("Invalid", AuthorizationStatus.INVALID, None),
        ("Unknown", AuthorizationStatus.INVALID, "Unknown"),
        ("NoCredit", AuthorizationStatus.BLOCKED, "NoCredit"),
        ("NotAllowedTypeEVSE", AuthorizationStatus.BLOCKED, "NotAllowedTypeEVSE"),
        ("NotAtThisLocation", AuthorizationStatus.BLOCKED, "NotAtThisLocation"),
        ("NotAtThisTime", AuthorizationStatus.BLOCKED, "NotAtThisTime"),
    ],
)
def test_authorization_statuses_map_with_the_stations_value_kept(
    station_status: str, status: AuthorizationStatus, kept: str | None
) -> None:
    mapped = map_authorization(station_status)
    assert (mapped.status, mapped.station_status) == (status, kept)


@pytest.mark.parametrize(
    ("stopped_reason", "reason", "kept"),
    [
        (None, StopReason.LOCAL, None),
        ("Local", StopReason.LOCAL, None),
        ("EVDisconnected", StopReason.EV_DISCONNECTED, None),
        ("Remote", StopReason.REMOTE, None),
        ("DeAuthorized", StopReason.DE_AUTHORIZED, None),
        ("EmergencyStop", StopReason.EMERGENCY_STOP, None),
        ("PowerLoss", StopReason.POWER_LOSS, None),
        ("Reboot", StopReason.REBOOT, None),
        ("StoppedByEV", StopReason.EV_DISCONNECTED, "StoppedByEV"),
        ("ImmediateReset", StopReason.HARD_RESET, "ImmediateReset"),
        ("EnergyLimitReached", StopReason.OTHER, "EnergyLimitReached"),
        ("GroundFault", StopReason.OTHER, "GroundFault"),
        ("Timeout", StopReason.OTHER, "Timeout"),
    ],
)
def test_stop_reasons_map_with_the_stations_value_kept(
    stopped_reason: str | None, reason: StopReason, kept: str | None
) -> None:
    mapped = map_stop_reason(stopped_reason)
    assert (mapped.reason, mapped.station_reason) == (reason, kept)


@pytest.mark.parametrize(
    ("tech_code", "tech_info", "fault"),
    [
        ("GroundFailure", "RCD tripped", Fault(ChargePointErrorCode.GROUND_FAILURE, "RCD tripped")),
        ("overCurrentFailure", None, Fault(ChargePointErrorCode.OVER_CURRENT_FAILURE)),
        ("E-4711", "contactor welded", Fault(ChargePointErrorCode.OTHER_ERROR, "E-4711")),
        (None, "contactor welded", Fault(ChargePointErrorCode.OTHER_ERROR, "contactor welded")),
        ("NoError", None, Fault(ChargePointErrorCode.OTHER_ERROR, "NoError")),
        (None, None, Fault(ChargePointErrorCode.OTHER_ERROR)),
    ],
)
def test_a_problem_maps_to_the_16_error_code_its_tech_code_names_else_other_error_with_the_code(
    tech_code: str | None, tech_info: str | None, fault: Fault
) -> None:
    assert map_fault(tech_code, tech_info) == fault


def test_a_problem_reads_as_faulted_with_its_error_code_until_it_clears() -> None:
    charging = EvseConnector(OCCUPIED, RUNNING, ChargingState.CHARGING, True)
    faulted = fault_reported(charging, Fault(ChargePointErrorCode.GROUND_FAILURE, "RCD"))
    assert derive(faulted) == DerivedStatus(ConnectorStatus.FAULTED, ChargePointErrorCode.GROUND_FAILURE, "RCD")
    assert derive(connector_reported(faulted, OCCUPIED)) == derive(faulted)  # a status does not clear it
    assert derive(fault_reported(faulted, None)) == DerivedStatus(ConnectorStatus.CHARGING)


@pytest.mark.parametrize(
    ("connector", "derived"),
    [
        (EvseConnector(ConnectorState.FAULTED), DerivedStatus(ConnectorStatus.AVAILABLE)),
        (EvseConnector(None), DerivedStatus(ConnectorStatus.AVAILABLE)),
        (EvseConnector(ConnectorState.FAULTED, RUNNING), DerivedStatus(ConnectorStatus.PREPARING)),
        (EvseConnector(ConnectorState.UNAVAILABLE), DerivedStatus(ConnectorStatus.UNAVAILABLE)),
    ],
)
def test_a_cleared_problem_reads_as_free_unless_the_station_said_otherwise(
    connector: EvseConnector, derived: DerivedStatus
) -> None:
    faulted = fault_reported(connector, Fault(ChargePointErrorCode.OTHER_ERROR, "E-1"))
    assert derive(fault_reported(faulted, None)) == derived


def test_a_faulted_status_notification_says_other_error() -> None:
    faulted = EvseConnector(ConnectorState.FAULTED)
    assert derive(faulted) == DerivedStatus(ConnectorStatus.FAULTED, ChargePointErrorCode.OTHER_ERROR)


NO_ERROR = ChargePointErrorCode.NO_ERROR


@pytest.mark.parametrize(
    ("last", "error_code", "info", "transaction_open", "derived"),
    [
        (ConnectorStatus.CHARGING, NO_ERROR, None, True, ConnectorStatus.CHARGING),
        (ConnectorStatus.SUSPENDED_EV, NO_ERROR, None, True, ConnectorStatus.SUSPENDED_EV),
        (ConnectorStatus.SUSPENDED_EVSE, NO_ERROR, None, True, ConnectorStatus.SUSPENDED_EVSE),
        (ConnectorStatus.PREPARING, NO_ERROR, None, True, ConnectorStatus.PREPARING),
        (ConnectorStatus.PREPARING, NO_ERROR, None, False, ConnectorStatus.PREPARING),
        (ConnectorStatus.FINISHING, NO_ERROR, None, False, ConnectorStatus.FINISHING),
        (ConnectorStatus.CHARGING, NO_ERROR, None, False, ConnectorStatus.FINISHING),
        (ConnectorStatus.AVAILABLE, NO_ERROR, None, False, ConnectorStatus.AVAILABLE),
        (ConnectorStatus.UNAVAILABLE, NO_ERROR, None, True, ConnectorStatus.UNAVAILABLE),
        (ConnectorStatus.FAULTED, ChargePointErrorCode.OTHER_ERROR, None, False, ConnectorStatus.FAULTED),
        (ConnectorStatus.FAULTED, ChargePointErrorCode.GROUND_FAILURE, None, True, ConnectorStatus.FAULTED),
        (None, NO_ERROR, None, True, ConnectorStatus.PREPARING),
        (None, NO_ERROR, None, False, None),
    ],
)
def test_a_new_connection_starts_from_the_last_status_and_the_open_transaction(
    last: ConnectorStatus | None,
    error_code: ChargePointErrorCode,
    info: str | None,
    transaction_open: bool,
    derived: ConnectorStatus | None,
) -> None:
    assert derive_status(restored(last, error_code, info, transaction_open=transaction_open)) == derived


def test_a_transaction_charging_before_a_reconnect_keeps_charging_through_its_next_events() -> None:
    connector = restored(ConnectorStatus.CHARGING, NO_ERROR, None, transaction_open=True)
    connector = connector_reported(connector, OCCUPIED)  # what a station says of its connectors at boot
    connector = transaction_reported(connector, ended=False, charging=None, energy_flowed=False)
    assert derive_status(connector) is ConnectorStatus.CHARGING
    connector = transaction_reported(connector, ended=False, charging=ChargingState.EV_CONNECTED, energy_flowed=False)
    assert derive_status(connector) is ConnectorStatus.SUSPENDED_EV  # energy flowed before the reconnect


def test_a_problem_reported_before_a_reconnect_stays_until_cleared() -> None:
    connector = restored(ConnectorStatus.FAULTED, ChargePointErrorCode.GROUND_FAILURE, "RCD", transaction_open=False)
    assert derive(connector) == DerivedStatus(ConnectorStatus.FAULTED, ChargePointErrorCode.GROUND_FAILURE, "RCD")
    assert derive(fault_reported(connector, None)) == DerivedStatus(ConnectorStatus.AVAILABLE)


@pytest.mark.parametrize(
    ("last", "asked"),
    [
        (None, False),
        (ConnectorStatus.AVAILABLE, False),
        (ConnectorStatus.RESERVED, False),
        (ConnectorStatus.PREPARING, True),
        (ConnectorStatus.CHARGING, True),
        (ConnectorStatus.FINISHING, True),
        (ConnectorStatus.FAULTED, True),
        (ConnectorStatus.UNAVAILABLE, True),
    ],
)
def test_an_open_transaction_is_asked_after_only_where_it_shows(last: ConnectorStatus | None, asked: bool) -> None:
    assert transaction_may_be_open(last) is asked
    if not asked and last is not None:  # it reads the same either way
        opened = restored(last, NO_ERROR, None, transaction_open=True)
        assert derive(opened) == derive(restored(last, NO_ERROR, None, transaction_open=False))
