from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chargenet.meters.lease import LEASE_DURATION, RENEW_INTERVAL_S, BusLease, LeaseDecision, decide, expires_at

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
BUS = "tcp://10.0.4.20:502"


def test_bus_without_a_lease_row_is_taken() -> None:
    assert decide(None, "a", NOW) is LeaseDecision.TAKE


def test_released_lease_is_taken() -> None:
    assert decide(BusLease(BUS, None, None), "a", NOW) is LeaseDecision.TAKE


def test_own_lease_is_renewed() -> None:
    assert decide(BusLease(BUS, "a", NOW + timedelta(seconds=9)), "a", NOW) is LeaseDecision.RENEW


def test_own_expired_lease_is_renewed_because_nobody_took_it_in_between() -> None:
    assert decide(BusLease(BUS, "a", NOW - timedelta(seconds=30)), "a", NOW) is LeaseDecision.RENEW


def test_lease_of_another_process_is_left_until_it_expires() -> None:
    assert decide(BusLease(BUS, "b", NOW + timedelta(milliseconds=1)), "a", NOW) is LeaseDecision.LEAVE


def test_lease_of_another_process_is_taken_at_its_expiry() -> None:
    assert decide(BusLease(BUS, "b", NOW), "a", NOW) is LeaseDecision.TAKE


def test_lease_of_another_process_without_expiry_is_taken() -> None:
    assert decide(BusLease(BUS, "b", None), "a", NOW) is LeaseDecision.TAKE


def test_lease_lasts_ten_seconds_from_the_round() -> None:
    assert expires_at(NOW) == NOW + timedelta(seconds=10)


def test_a_dead_holder_loses_its_bus_within_fifteen_seconds() -> None:
    last_renewal = NOW
    lease = BusLease(BUS, "dead", expires_at(last_renewal))
    takeover = last_renewal + LEASE_DURATION + timedelta(seconds=RENEW_INTERVAL_S)
    assert decide(lease, "a", takeover) is LeaseDecision.TAKE
    assert (takeover - last_renewal).total_seconds() <= 15
