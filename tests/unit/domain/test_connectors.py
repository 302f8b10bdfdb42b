from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chargenet.domain.connectors import KnownStatus, decide_status
from chargenet.domain.events import ChargePointErrorCode, ConnectorStatus

T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def status(
    value: ConnectorStatus, at: datetime = T0, error: ChargePointErrorCode = ChargePointErrorCode.NO_ERROR
) -> KnownStatus:
    return KnownStatus(value, error, None, at)


def test_first_status_of_a_connector_raises_an_event() -> None:
    decision = decide_status(None, status(ConnectorStatus.AVAILABLE))
    assert decision.raises_event and decision.becomes_current


def test_unchanged_status_raises_no_event() -> None:
    decision = decide_status(status(ConnectorStatus.AVAILABLE), status(ConnectorStatus.AVAILABLE, T0 + timedelta(1)))
    assert not decision.raises_event and decision.becomes_current


def test_changed_status_raises_an_event() -> None:
    assert decide_status(status(ConnectorStatus.AVAILABLE), status(ConnectorStatus.PREPARING)).raises_event


def test_new_error_code_under_the_same_status_is_recorded_silently() -> None:
    decision = decide_status(
        status(ConnectorStatus.FAULTED),
        status(ConnectorStatus.FAULTED, error=ChargePointErrorCode.GROUND_FAILURE),
    )
    assert decision.becomes_current and not decision.raises_event


def test_status_older_than_the_last_known_is_history_only() -> None:
    decision = decide_status(status(ConnectorStatus.CHARGING), status(ConnectorStatus.AVAILABLE, T0 - timedelta(1)))
    assert not decision.becomes_current and not decision.raises_event
