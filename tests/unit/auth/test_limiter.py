from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chargenet.auth.limiter import FailureLimiter

T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def fail(
    limiter: FailureLimiter,
    times: int,
    *,
    client: str | None = "app_1",
    address: str | None = "10.0.0.1",
    start: float = 0.0,
) -> None:
    for i in range(times):
        limiter.record_failure(client_id=client, address=address, now=at(start + i * 0.1))


def test_ten_failures_are_allowed_before_blocking() -> None:
    limiter = FailureLimiter()
    fail(limiter, 9)
    assert limiter.retry_after(client_id="app_1", address="10.0.0.1", now=at(1)) is None


def test_eleventh_attempt_for_a_client_id_is_refused() -> None:
    limiter = FailureLimiter()
    fail(limiter, 10)
    assert limiter.retry_after(client_id="app_1", address="10.0.0.2", now=at(1)) == 59


def test_block_lifts_when_the_oldest_failure_leaves_the_window() -> None:
    limiter = FailureLimiter()
    fail(limiter, 10)
    assert limiter.retry_after(client_id="app_1", address=None, now=at(60.05)) is None


def test_other_client_ids_are_not_blocked_by_one_clients_failures() -> None:
    limiter = FailureLimiter()
    fail(limiter, 10, address=None)
    assert limiter.retry_after(client_id="app_2", address="10.0.0.1", now=at(1)) is None


def test_fifty_failures_from_one_address_block_any_client_id() -> None:
    limiter = FailureLimiter()
    for i in range(50):
        limiter.record_failure(client_id=f"app_{i}", address="10.0.0.1", now=at(i * 0.1))
    assert limiter.retry_after(client_id="app_new", address="10.0.0.1", now=at(6)) == 54
    assert limiter.retry_after(client_id="app_new", address="10.0.0.2", now=at(6)) is None


def test_retry_after_is_at_least_one_second() -> None:
    limiter = FailureLimiter()
    fail(limiter, 10)
    assert limiter.retry_after(client_id="app_1", address=None, now=at(59.99)) == 1


def test_stalest_keys_are_forgotten_beyond_the_bound() -> None:
    limiter = FailureLimiter(max_tracked=2)
    fail(limiter, 10, client="app_1", address=None)
    fail(limiter, 1, client="app_2", address=None)
    fail(limiter, 1, client="app_3", address=None)
    assert limiter.retry_after(client_id="app_1", address=None, now=at(2)) is None
