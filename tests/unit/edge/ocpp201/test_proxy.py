from __future__ import annotations

import pytest

from chargenet.edge.core.authorize import UpstreamState
from chargenet.edge.ocpp16.errors import UnsupportedAction
from chargenet.edge.ocpp16.proxy import Fallback, Handling, UpstreamFailure
from chargenet.edge.ocpp201 import proxy

CONNECTED, AWAY, NONE = UpstreamState.CONNECTED, UpstreamState.AWAY, UpstreamState.NONE


def test_boot_goes_to_a_connected_upstream_and_is_answered_by_the_edge_otherwise() -> None:
    routes = [proxy.route_station_call("BootNotification", state, True) for state in (CONNECTED, AWAY, NONE)]
    assert routes == [Handling.FORWARD, Handling.LOCAL, Handling.LOCAL]


def test_a_transaction_event_is_queued_while_the_upstream_is_away() -> None:
    assert proxy.route_station_call("TransactionEvent", AWAY, queue_empty=True) is Handling.QUEUE


def test_a_transaction_event_queues_behind_older_ones_after_a_reconnect() -> None:
    assert proxy.route_station_call("TransactionEvent", CONNECTED, queue_empty=False) is Handling.QUEUE
    assert proxy.route_station_call("TransactionEvent", CONNECTED, queue_empty=True) is Handling.FORWARD


def test_without_an_upstream_link_a_transaction_event_is_the_edges_alone() -> None:
    assert proxy.route_station_call("TransactionEvent", NONE, queue_empty=True) is Handling.LOCAL


def test_readings_outside_a_transaction_are_not_queued() -> None:
    assert proxy.route_station_call("MeterValues", AWAY, queue_empty=False) is Handling.LOCAL


def test_authorize_is_decided_by_the_chain_whatever_the_upstream() -> None:
    assert {proxy.route_station_call("Authorize", state, True) for state in UpstreamState} == {Handling.DECIDE}


@pytest.mark.parametrize("action", ["Get15118EVCertificate", "NotifyEVChargingNeeds", "ReportChargingProfiles"])
def test_what_the_edge_leaves_to_a_central_system_goes_to_a_connected_upstream_only(action: str) -> None:
    routes = [proxy.route_station_call(action, state, True) for state in (CONNECTED, AWAY, NONE)]
    assert routes == [Handling.FORWARD, Handling.UNSUPPORTED, Handling.UNSUPPORTED]


def test_a_csms_action_from_the_station_is_unsupported() -> None:
    assert proxy.route_station_call("RequestStartTransaction", CONNECTED, True) is Handling.UNSUPPORTED


def test_the_upstream_may_send_csms_actions_only() -> None:
    proxy.check_upstream_may_send("GetVariables", "u1")
    proxy.check_upstream_may_send("DataTransfer", "u2")
    with pytest.raises(UnsupportedAction):
        proxy.check_upstream_may_send("TransactionEvent", "u3")


def test_a_transaction_event_not_answered_in_time_is_queued_and_one_refused_is_not() -> None:
    assert proxy.fallback("TransactionEvent", UpstreamFailure.TIMEOUT) is Fallback.ANSWER_AND_QUEUE
    assert proxy.fallback("TransactionEvent", UpstreamFailure.CALL_ERROR) is Fallback.ANSWER_LOCALLY


def test_other_messages_get_the_edges_answer_on_a_timeout_and_the_upstreams_error_as_it_came() -> None:
    assert proxy.fallback("StatusNotification", UpstreamFailure.TIMEOUT) is Fallback.ANSWER_LOCALLY
    assert proxy.fallback("StatusNotification", UpstreamFailure.CALL_ERROR) is Fallback.RELAY_ERROR
    assert proxy.fallback("NotifyEVChargingNeeds", UpstreamFailure.TIMEOUT) is Fallback.RELAY_ERROR


def test_sign_certificate_is_decided_by_the_site_and_a_relayed_one_not_answered_in_time_is_rejected() -> None:
    assert {proxy.route_station_call("SignCertificate", state, True) for state in UpstreamState} == {Handling.DECIDE}
    assert proxy.fallback("SignCertificate", UpstreamFailure.TIMEOUT) is Fallback.ANSWER_LOCALLY
