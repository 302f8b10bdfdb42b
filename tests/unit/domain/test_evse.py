"""decisions.md §5 "Events from 2.0.1": the derived ChargePointStatus and the mapped statuses and stop reasons."""

from __future__ import annotations

import pytest

from chargenet.domain.events import AuthorizationStatus, ConnectorStatus, StopReason
from chargenet.domain.evse import (
    ChargingState,
    ConnectorState,
    EvseConnector,
    TransactionPhase,
    connector_reported,
    derive_status,
    map_authorization,
    map_stop_reason,
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
