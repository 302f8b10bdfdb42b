from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chargenet.domain.connectors import KnownStatus
from chargenet.domain.events import ChargePointErrorCode, ConnectorStatus
from chargenet.edge.core import status

S = ConnectorStatus
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def known(
    value: ConnectorStatus, at: datetime = T0, error: ChargePointErrorCode = ChargePointErrorCode.NO_ERROR
) -> KnownStatus:
    return KnownStatus(status=value, error_code=error, info=None, timestamp=at)


def test_table_has_every_status_as_a_source() -> None:
    assert set(status.ALLOWED) == {None, *S}


def test_table_has_the_spec_count_of_transitions() -> None:
    # 7 + 6 + 6 + 6 + 6 + 4 + 4 + 6 + 8: the cells of OCPP 1.6 §4.9 that name a transition (19 of 72 are empty).
    assert sum(len(v) for k, v in status.ALLOWED.items() if k is not None) == 53


@pytest.mark.parametrize(
    ("previous", "reported"),
    [
        (S.AVAILABLE, S.FINISHING),  # A6
        (S.PREPARING, S.RESERVED),  # B7
        (S.PREPARING, S.UNAVAILABLE),  # B8
        (S.CHARGING, S.PREPARING),  # C2
        (S.CHARGING, S.RESERVED),  # C7
        (S.FINISHING, S.CHARGING),  # F3
        (S.RESERVED, S.CHARGING),  # G3
        (S.UNAVAILABLE, S.FINISHING),  # H6
        (S.UNAVAILABLE, S.RESERVED),  # H7
    ],
)
def test_transitions_the_spec_leaves_out_are_unexpected(previous: ConnectorStatus, reported: ConnectorStatus) -> None:
    assert not status.is_expected(1, previous, reported)


@pytest.mark.parametrize(
    ("previous", "reported"),
    [(S.AVAILABLE, S.PREPARING), (S.PREPARING, S.CHARGING), (S.CHARGING, S.FINISHING), (S.FINISHING, S.AVAILABLE)],
)
def test_plug_and_charge_cycle_is_expected(previous: ConnectorStatus, reported: ConnectorStatus) -> None:
    assert status.is_expected(1, previous, reported)


def test_first_report_of_charging_is_unexpected() -> None:
    assert not status.is_expected(1, None, S.CHARGING)


def test_first_report_of_available_is_expected() -> None:
    assert status.is_expected(1, None, S.AVAILABLE)


def test_same_status_is_expected() -> None:
    assert status.is_expected(1, S.CHARGING, S.CHARGING)


def test_connector_zero_charging_is_unexpected() -> None:
    assert not status.is_expected(0, S.AVAILABLE, S.CHARGING)


def test_connector_zero_unavailable_after_available_is_expected() -> None:
    assert status.is_expected(0, S.AVAILABLE, S.UNAVAILABLE)


def test_connector_zero_leaving_a_status_it_cannot_have_is_unexpected() -> None:
    assert not status.is_expected(0, S.CHARGING, S.AVAILABLE)


def test_label_names_the_transition_like_the_spec() -> None:
    assert status.transition_label(S.CHARGING, S.FINISHING) == "C6"
    assert status.transition_label(S.FAULTED, S.UNAVAILABLE) == "I8"
    assert status.transition_label(None, S.AVAILABLE) == "-1"


def test_first_status_raises_an_event() -> None:
    assessment = status.assess(1, None, known(S.AVAILABLE))
    assert assessment.decision.raises_event and assessment.expected


def test_unchanged_status_raises_no_event() -> None:
    assessment = status.assess(1, known(S.AVAILABLE), known(S.AVAILABLE, T0 + timedelta(seconds=1)))
    assert not assessment.decision.raises_event and assessment.decision.becomes_current


def test_new_error_code_under_the_same_status_raises_no_event() -> None:
    reported = known(S.AVAILABLE, T0 + timedelta(seconds=1), ChargePointErrorCode.WEAK_SIGNAL)
    assert not status.assess(1, known(S.AVAILABLE), reported).decision.raises_event


def test_unexpected_transition_still_becomes_current_and_raises_an_event() -> None:
    assessment = status.assess(1, known(S.AVAILABLE), known(S.FINISHING, T0 + timedelta(seconds=1)))
    assert assessment.decision.becomes_current and assessment.decision.raises_event
    assert not assessment.expected and assessment.transition == "A6"


def test_older_report_is_history_without_event_and_not_judged() -> None:
    assessment = status.assess(1, known(S.CHARGING), known(S.FINISHING, T0 - timedelta(seconds=1)))
    assert not assessment.decision.becomes_current and not assessment.decision.raises_event
    assert assessment.expected and assessment.transition == "history"


def test_counts_keep_only_unexpected_transitions() -> None:
    counts = status.TransitionCounts()
    counts.record(status.assess(1, known(S.AVAILABLE), known(S.FINISHING, T0 + timedelta(seconds=1))))
    counts.record(status.assess(1, known(S.AVAILABLE), known(S.PREPARING, T0 + timedelta(seconds=1))))
    assert counts.unexpected == {"A6": 1} and counts.total_unexpected == 1
