from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chargenet.edge.core.authorize import UpstreamState
from chargenet.edge.ocpp16 import frames, proxy
from chargenet.edge.ocpp16.errors import UnsupportedAction
from chargenet.edge.ocpp16.proxy import Fallback, Handling, UpstreamFailure

T0 = datetime(2026, 1, 1, 12, 0, 0, 123000, tzinfo=UTC)
CONNECTED, AWAY, NONE = UpstreamState.CONNECTED, UpstreamState.AWAY, UpstreamState.NONE


def test_boot_is_forwarded_when_upstream_is_connected() -> None:
    assert proxy.route_station_call("BootNotification", CONNECTED, queue_empty=True) is Handling.FORWARD


def test_boot_is_answered_locally_when_upstream_is_away() -> None:
    assert proxy.route_station_call("BootNotification", AWAY, queue_empty=True) is Handling.LOCAL


def test_start_is_queued_when_upstream_is_away() -> None:
    assert proxy.route_station_call("StartTransaction", AWAY, queue_empty=True) is Handling.QUEUE


def test_meter_values_queue_behind_older_messages_after_reconnect() -> None:
    assert proxy.route_station_call("MeterValues", CONNECTED, queue_empty=False) is Handling.QUEUE


def test_status_is_forwarded_even_while_transaction_messages_wait() -> None:
    assert proxy.route_station_call("StatusNotification", CONNECTED, queue_empty=False) is Handling.FORWARD


def test_without_upstream_transactions_are_answered_locally() -> None:
    assert proxy.route_station_call("StopTransaction", NONE, queue_empty=True) is Handling.LOCAL


def test_authorize_is_decided_by_the_chain() -> None:
    assert {proxy.route_station_call("Authorize", u, True) for u in UpstreamState} == {Handling.DECIDE}


def test_security_event_is_forwarded_to_a_connected_upstream() -> None:
    assert proxy.route_station_call("SecurityEventNotification", CONNECTED, True) is Handling.FORWARD


def test_security_event_without_upstream_is_answered_locally() -> None:
    assert proxy.route_station_call("SecurityEventNotification", NONE, True) is Handling.LOCAL


def test_sign_certificate_is_decided_by_the_site_whatever_the_upstream() -> None:
    assert {proxy.route_station_call("SignCertificate", u, True) for u in UpstreamState} == {Handling.DECIDE}


def test_central_action_from_a_station_is_unsupported() -> None:
    assert proxy.route_station_call("Reset", CONNECTED, True) is Handling.UNSUPPORTED
    with pytest.raises(UnsupportedAction):
        proxy.check_station_may_send("Reset", "a")


def test_station_action_from_the_upstream_is_unsupported() -> None:
    with pytest.raises(UnsupportedAction) as caught:
        proxy.check_upstream_may_send("Heartbeat", "u1")
    assert caught.value.unique_id == "u1"


def test_any_central_action_from_the_upstream_is_relayed() -> None:
    for action in frames.CENTRAL_ACTIONS:
        proxy.check_upstream_may_send(action, "u1")


def test_commands_are_central_actions() -> None:
    assert proxy.COMMAND_ACTIONS <= frames.CENTRAL_ACTIONS


def test_start_timing_out_upstream_is_answered_and_queued() -> None:
    assert proxy.fallback("StartTransaction", UpstreamFailure.TIMEOUT) is Fallback.ANSWER_AND_QUEUE


def test_stop_refused_upstream_is_still_acknowledged() -> None:
    assert proxy.fallback("StopTransaction", UpstreamFailure.CALL_ERROR) is Fallback.ANSWER_LOCALLY


def test_heartbeat_timing_out_upstream_is_answered_locally() -> None:
    assert proxy.fallback("Heartbeat", UpstreamFailure.TIMEOUT) is Fallback.ANSWER_LOCALLY


def test_data_transfer_refused_upstream_relays_the_error() -> None:
    assert proxy.fallback("DataTransfer", UpstreamFailure.CALL_ERROR) is Fallback.RELAY_ERROR


def test_a_relayed_sign_certificate_timing_out_upstream_is_answered_locally() -> None:
    assert proxy.fallback("SignCertificate", UpstreamFailure.TIMEOUT) is Fallback.ANSWER_LOCALLY


@pytest.mark.parametrize(
    "action",
    [
        "BootNotification",
        "Heartbeat",
        "StatusNotification",
        "MeterValues",
        "StopTransaction",
        "DataTransfer",
        "DiagnosticsStatusNotification",
        "FirmwareStatusNotification",
    ],
)
def test_local_answers_fit_the_response_schema(action: str) -> None:
    frames.build_result(action, "a", proxy.local_answer(action, T0))


def test_boot_answer_has_the_heartbeat_interval_and_utc_time() -> None:
    assert proxy.local_answer("BootNotification", T0) == {
        "status": "Accepted",
        "currentTime": "2026-01-01T12:00:00.123Z",
        "interval": 300,
    }


def test_reconnect_delay_doubles_from_one_second() -> None:
    assert [proxy.reconnect_delay(n, 0.999999) for n in range(3)] == pytest.approx([1, 2, 4], rel=1e-5)


def test_reconnect_delay_never_exceeds_thirty_seconds() -> None:
    assert proxy.reconnect_delay(1000, 0.999999) <= 30


def test_reconnect_delay_jitter_keeps_at_least_half() -> None:
    assert proxy.reconnect_delay(10, 0.0) == 15


def test_idle_limit_is_two_intervals_and_a_minute() -> None:
    assert proxy.idle_limit(300) == timedelta(seconds=660)


def test_boot_answer_gives_its_interval() -> None:
    answer = {"status": "Accepted", "currentTime": "2026-01-01T12:00:00Z", "interval": 3600}
    assert proxy.interval_given("BootNotification", {}, answer, 300) == 3600


def test_boot_answer_with_interval_zero_keeps_the_current_one() -> None:
    answer = {"status": "Accepted", "currentTime": "2026-01-01T12:00:00Z", "interval": 0}
    assert proxy.interval_given("BootNotification", {}, answer, 300) == 300


def test_accepted_heartbeat_interval_change_gives_the_new_interval() -> None:
    change = {"key": "HeartbeatInterval", "value": "900"}
    assert proxy.interval_given("ChangeConfiguration", change, {"status": "Accepted"}, 300) == 900


def test_rejected_heartbeat_interval_change_keeps_the_current_one() -> None:
    change = {"key": "HeartbeatInterval", "value": "900"}
    assert proxy.interval_given("ChangeConfiguration", change, {"status": "Rejected"}, 300) == 300


def test_heartbeat_interval_change_applied_after_a_reboot_holds_the_longer_one() -> None:
    shorter = {"key": "HeartbeatInterval", "value": "60"}
    assert proxy.interval_given("ChangeConfiguration", shorter, {"status": "RebootRequired"}, 300) == 300


def test_change_of_another_key_or_an_unreadable_interval_keeps_the_current_one() -> None:
    other = {"key": "MeterValueSampleInterval", "value": "900"}
    unreadable = {"key": "HeartbeatInterval", "value": "often"}
    assert proxy.interval_given("ChangeConfiguration", other, {"status": "Accepted"}, 300) == 300
    assert proxy.interval_given("ChangeConfiguration", unreadable, {"status": "Accepted"}, 300) == 300
