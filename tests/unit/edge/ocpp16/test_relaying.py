from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chargenet.edge.core import transactions as tx
from chargenet.edge.ocpp16 import proxy, relaying

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_stop_going_up_carries_the_upstream_id() -> None:
    ids = tx.IdMap({7: 9001})
    payload = relaying.rewrite_for_upstream("StopTransaction", {"transactionId": 7, "meterStop": 5}, ids)
    assert payload == {"transactionId": 9001, "meterStop": 5}


def test_meter_values_going_up_carry_the_upstream_id() -> None:
    payload = relaying.rewrite_for_upstream("MeterValues", {"connectorId": 1, "transactionId": 7}, tx.IdMap({7: 9001}))
    assert payload["transactionId"] == 9001


def test_meter_values_outside_a_transaction_go_up_unchanged() -> None:
    payload = {"connectorId": 1, "meterValue": []}
    assert relaying.rewrite_for_upstream("MeterValues", payload, tx.IdMap()) is payload


def test_stop_before_the_upstream_answered_the_start_is_pending() -> None:
    with pytest.raises(tx.UpstreamIdPending):
        relaying.rewrite_for_upstream("StopTransaction", {"transactionId": 7}, tx.IdMap())


def test_stop_of_a_transaction_the_upstream_refused_is_refused() -> None:
    ids = tx.IdMap()
    ids.refuse(7)
    with pytest.raises(tx.UpstreamIdRefused):
        relaying.rewrite_for_upstream("StopTransaction", {"transactionId": 7}, ids)


def test_upstream_id_0_is_mapped_both_ways() -> None:
    ids = tx.IdMap({7: 0})
    assert relaying.rewrite_for_upstream("StopTransaction", {"transactionId": 7}, ids) == {"transactionId": 0}
    assert relaying.rewrite_for_station("RemoteStopTransaction", {"transactionId": 0}, ids) == {"transactionId": 7}


def test_stop_of_a_refused_transaction_with_an_upstream_id_is_refused() -> None:
    ids = tx.IdMap({7: 9001})
    ids.refuse(7)
    with pytest.raises(tx.UpstreamIdRefused):
        relaying.rewrite_for_upstream("StopTransaction", {"transactionId": 7}, ids)


def test_remote_stop_coming_down_carries_the_edge_id() -> None:
    payload = relaying.rewrite_for_station("RemoteStopTransaction", {"transactionId": 9001}, tx.IdMap({7: 9001}))
    assert payload == {"transactionId": 7}


def test_remote_stop_for_an_unmapped_upstream_id_is_refused() -> None:
    with pytest.raises(tx.UnknownUpstreamId):
        relaying.rewrite_for_station("RemoteStopTransaction", {"transactionId": 7}, tx.IdMap({7: 9001}))


def test_tx_profile_coming_down_carries_the_edge_id_without_touching_the_original() -> None:
    original: dict[str, Any] = {"connectorId": 1, "csChargingProfiles": {"chargingProfileId": 1, "transactionId": 9001}}
    payload = relaying.rewrite_for_station("SetChargingProfile", original, tx.IdMap({7: 9001}))
    assert payload["csChargingProfiles"]["transactionId"] == 7
    assert original["csChargingProfiles"]["transactionId"] == 9001


def test_other_calls_coming_down_are_unchanged() -> None:
    payload = {"type": "Soft"}
    assert relaying.rewrite_for_station("Reset", payload, tx.IdMap()) is payload


def test_station_start_answer_has_the_upstream_id_tag_info_and_the_edge_id() -> None:
    answer = relaying.for_station_start(7, {"transactionId": 9001, "idTagInfo": {"status": "Accepted"}})
    assert answer == {"transactionId": 7, "idTagInfo": {"status": "Accepted"}}


def test_transaction_message_queues_while_upstream_is_away() -> None:
    assert proxy.is_queued("StartTransaction", upstream_connected=False, queue_empty=True)


def test_transaction_message_queues_behind_older_ones_after_reconnect() -> None:
    assert proxy.is_queued("MeterValues", upstream_connected=True, queue_empty=False)


def test_transaction_message_goes_straight_up_when_nothing_waits() -> None:
    assert not proxy.is_queued("StopTransaction", upstream_connected=True, queue_empty=True)


def test_heartbeat_never_queues() -> None:
    assert not proxy.is_queued("Heartbeat", upstream_connected=False, queue_empty=False)


def queued_stop() -> relaying.QueuedMessage:
    return relaying.QueuedMessage(1, "StopTransaction", {"transactionId": 7, "meterStop": 5}, 7)


def test_replay_sends_the_head_with_upstream_ids() -> None:
    replay = relaying.next_replay(queued_stop(), tx.IdMap({7: 9001}), None, T0, relaying.ReplayPolicy())
    assert replay.step is relaying.ReplayStep.SEND and replay.payload == {"transactionId": 9001, "meterStop": 5}


def test_replay_is_throttled_to_the_policy_rate() -> None:
    replay = relaying.next_replay(
        queued_stop(), tx.IdMap({7: 9001}), T0, T0 + timedelta(milliseconds=50), relaying.ReplayPolicy()
    )
    assert replay.step is relaying.ReplayStep.WAIT_THROTTLE
    assert replay.not_before == T0 + timedelta(milliseconds=100)


def test_replay_drops_messages_of_a_refused_transaction() -> None:
    ids = tx.IdMap()
    ids.refuse(7)
    assert relaying.next_replay(queued_stop(), ids, None, T0, relaying.ReplayPolicy()).step is relaying.ReplayStep.DROP
