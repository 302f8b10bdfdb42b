from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chargenet.domain.events import StopReason
from chargenet.edge.core import transactions as tx
from chargenet.edge.ocpp16.errors import LocalProtocolError

T0 = datetime(2026, 1, 1, tzinfo=UTC)
KEY = tx.StartKey("CS-1", 1, "TAG1", T0, 1000)


def record(transaction_id: int = 7, *, station: str = "CS-1", stopped: bool = False) -> tx.TransactionRecord:
    return tx.TransactionRecord(transaction_id, tx.StartKey(station, 1, "TAG1", T0, 1000), stopped=stopped)


def test_new_start_is_new_without_an_id_yet() -> None:
    assert tx.decide_start(None) == tx.StartDecision(None, is_new=True)


def test_repeated_start_gets_the_same_id_and_no_new_transaction() -> None:
    assert tx.decide_start(record(7)) == tx.StartDecision(7, is_new=False)


@pytest.mark.parametrize("bad", [0, -1, 2**31])
def test_minted_id_outside_positive_int32_is_a_local_error(bad: int) -> None:
    with pytest.raises(LocalProtocolError):
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


def test_stop_going_up_carries_the_upstream_id() -> None:
    ids = tx.IdMap({7: 9001})
    payload = tx.rewrite_for_upstream("StopTransaction", {"transactionId": 7, "meterStop": 5}, ids)
    assert payload == {"transactionId": 9001, "meterStop": 5}


def test_meter_values_going_up_carry_the_upstream_id() -> None:
    payload = tx.rewrite_for_upstream("MeterValues", {"connectorId": 1, "transactionId": 7}, tx.IdMap({7: 9001}))
    assert payload["transactionId"] == 9001


def test_meter_values_outside_a_transaction_go_up_unchanged() -> None:
    payload = {"connectorId": 1, "meterValue": []}
    assert tx.rewrite_for_upstream("MeterValues", payload, tx.IdMap()) is payload


def test_stop_before_the_upstream_answered_the_start_is_pending() -> None:
    with pytest.raises(tx.UpstreamIdPending):
        tx.rewrite_for_upstream("StopTransaction", {"transactionId": 7}, tx.IdMap())


def test_stop_of_a_transaction_the_upstream_refused_is_refused() -> None:
    ids = tx.IdMap()
    ids.refuse(7)
    with pytest.raises(tx.UpstreamIdRefused):
        tx.rewrite_for_upstream("StopTransaction", {"transactionId": 7}, ids)


def test_upstream_id_0_is_mapped_both_ways() -> None:
    ids = tx.IdMap({7: 0})
    assert tx.rewrite_for_upstream("StopTransaction", {"transactionId": 7}, ids) == {"transactionId": 0}
    assert tx.rewrite_for_station("RemoteStopTransaction", {"transactionId": 0}, ids) == {"transactionId": 7}


def test_stop_of_a_refused_transaction_with_an_upstream_id_is_refused() -> None:
    ids = tx.IdMap({7: 9001})
    ids.refuse(7)
    with pytest.raises(tx.UpstreamIdRefused):
        tx.rewrite_for_upstream("StopTransaction", {"transactionId": 7}, ids)


def test_remote_stop_coming_down_carries_the_edge_id() -> None:
    payload = tx.rewrite_for_station("RemoteStopTransaction", {"transactionId": 9001}, tx.IdMap({7: 9001}))
    assert payload == {"transactionId": 7}


def test_remote_stop_for_an_unmapped_upstream_id_is_refused() -> None:
    with pytest.raises(tx.UnknownUpstreamId):
        tx.rewrite_for_station("RemoteStopTransaction", {"transactionId": 7}, tx.IdMap({7: 9001}))


def test_tx_profile_coming_down_carries_the_edge_id_without_touching_the_original() -> None:
    original: dict[str, Any] = {"connectorId": 1, "csChargingProfiles": {"chargingProfileId": 1, "transactionId": 9001}}
    payload = tx.rewrite_for_station("SetChargingProfile", original, tx.IdMap({7: 9001}))
    assert payload["csChargingProfiles"]["transactionId"] == 7
    assert original["csChargingProfiles"]["transactionId"] == 9001


def test_other_calls_coming_down_are_unchanged() -> None:
    payload = {"type": "Soft"}
    assert tx.rewrite_for_station("Reset", payload, tx.IdMap()) is payload


def test_station_start_answer_has_the_upstream_id_tag_info_and_the_edge_id() -> None:
    answer = tx.for_station_start(7, {"transactionId": 9001, "idTagInfo": {"status": "Accepted"}})
    assert answer == {"transactionId": 7, "idTagInfo": {"status": "Accepted"}}


def test_transaction_message_queues_while_upstream_is_away() -> None:
    assert tx.is_queued("StartTransaction", upstream_connected=False, queue_empty=True)


def test_transaction_message_queues_behind_older_ones_after_reconnect() -> None:
    assert tx.is_queued("MeterValues", upstream_connected=True, queue_empty=False)


def test_transaction_message_goes_straight_up_when_nothing_waits() -> None:
    assert not tx.is_queued("StopTransaction", upstream_connected=True, queue_empty=True)


def test_heartbeat_never_queues() -> None:
    assert not tx.is_queued("Heartbeat", upstream_connected=False, queue_empty=False)


def queued_stop() -> tx.QueuedMessage:
    return tx.QueuedMessage(1, "StopTransaction", {"transactionId": 7, "meterStop": 5}, 7)


def test_replay_sends_the_head_with_upstream_ids() -> None:
    replay = tx.next_replay(queued_stop(), tx.IdMap({7: 9001}), None, T0, tx.ReplayPolicy())
    assert replay.step is tx.ReplayStep.SEND and replay.payload == {"transactionId": 9001, "meterStop": 5}


def test_replay_is_throttled_to_the_policy_rate() -> None:
    replay = tx.next_replay(queued_stop(), tx.IdMap({7: 9001}), T0, T0 + timedelta(milliseconds=50), tx.ReplayPolicy())
    assert replay.step is tx.ReplayStep.WAIT_THROTTLE
    assert replay.not_before == T0 + timedelta(milliseconds=100)


def test_replay_drops_messages_of_a_refused_transaction() -> None:
    ids = tx.IdMap()
    ids.refuse(7)
    assert tx.next_replay(queued_stop(), ids, None, T0, tx.ReplayPolicy()).step is tx.ReplayStep.DROP
