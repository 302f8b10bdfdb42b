from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chargenet.domain.events import StopReason
from chargenet.edge.core import transactions as tx

T0 = datetime(2026, 1, 1, tzinfo=UTC)
KEY = tx.StartKey("CS-1", 1, "TAG1", T0, 1000)


def record(transaction_id: int = 7, *, station: str = "CS-1", stopped: bool = False) -> tx.TransactionRecord:
    return tx.TransactionRecord(transaction_id, tx.StartKey(station, 1, "TAG1", T0, 1000), stopped=stopped)


@pytest.mark.parametrize("bad", [0, -1, 2**31])
def test_minted_id_outside_positive_int32_is_a_local_error(bad: int) -> None:
    with pytest.raises(tx.TransactionRuleError):
        tx.check_transaction_id(bad)


def test_minted_id_inside_positive_int32_passes() -> None:
    assert tx.check_transaction_id(2**31 - 1) == 2**31 - 1


def test_first_stop_of_an_open_transaction_raises_an_event() -> None:
    outcome = tx.decide_stop(record(), "CS-1")
    assert outcome is tx.StopOutcome.STOPPED and outcome.raises_event


def test_repeated_stop_raises_no_event() -> None:
    outcome = tx.decide_stop(record(stopped=True), "CS-1")
    assert outcome is tx.StopOutcome.REPEATED and not outcome.raises_event


def test_stop_of_an_unknown_transaction_is_unknown() -> None:
    assert tx.decide_stop(None, "CS-1") is tx.StopOutcome.UNKNOWN


def test_stop_of_another_stations_transaction_is_unknown() -> None:
    assert tx.decide_stop(record(station="CS-2"), "CS-1") is tx.StopOutcome.UNKNOWN


def test_missing_stop_reason_is_local() -> None:
    assert tx.stop_reason(None) is StopReason.LOCAL


def test_reported_stop_reason_is_kept() -> None:
    assert tx.stop_reason("EVDisconnected") is StopReason.EV_DISCONNECTED


def test_newer_start_on_the_connector_closes_the_open_transaction_at_its_start() -> None:
    later = tx.StartKey("CS-1", 1, "TAG2", T0 + timedelta(hours=1), 8500)
    assert tx.supersede(record(7), later) == tx.Superseded(7, T0 + timedelta(hours=1), 8500, StopReason.OTHER)


def test_start_on_another_connector_closes_nothing() -> None:
    assert tx.supersede(record(), tx.StartKey("CS-1", 2, "TAG1", T0 + timedelta(hours=1), 8500)) is None


def test_start_older_than_the_open_transaction_closes_nothing() -> None:
    assert tx.supersede(record(), tx.StartKey("CS-1", 1, "TAG1", T0 - timedelta(hours=1), 0)) is None


def test_the_same_start_closes_nothing() -> None:
    assert tx.supersede(record(), KEY) is None


def test_stopped_transaction_is_not_closed_again() -> None:
    assert tx.supersede(record(stopped=True), tx.StartKey("CS-1", 1, "TAG1", T0 + timedelta(hours=1), 8500)) is None


def test_meter_gone_backwards_closes_with_no_energy() -> None:
    ending = tx.supersede(record(), tx.StartKey("CS-1", 1, "TAG1", T0 + timedelta(hours=1), 10))
    assert ending is not None and ending.meter_stop == 1000


def test_a_message_outside_a_transaction_goes_up_as_it_is() -> None:
    assert tx.delivery(None, tx.IdMap()) is tx.Delivery.SEND


def test_a_message_of_a_mapped_transaction_goes_up() -> None:
    assert tx.delivery(7, tx.IdMap({7: 9001})) is tx.Delivery.SEND


def test_a_message_whose_start_has_no_upstream_id_yet_waits_in_the_queue() -> None:
    assert tx.delivery(7, tx.IdMap()) is tx.Delivery.QUEUE


def test_a_message_of_a_refused_transaction_is_kept_by_the_edge() -> None:
    ids = tx.IdMap({7: 9001})
    ids.refuse(7)
    assert tx.delivery(7, ids) is tx.Delivery.KEEP
