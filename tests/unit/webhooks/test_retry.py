from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chargenet.webhooks.retry import RetryPolicy

T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def test_retry_starts_ten_seconds_after_the_failed_attempt_ended() -> None:
    assert RetryPolicy().next_attempt_at(1, T0) == T0 + timedelta(seconds=10)


def test_three_hundred_sixty_retries_follow_the_first_attempt() -> None:
    assert RetryPolicy().next_attempt_at(360, T0) == T0 + timedelta(seconds=10)


def test_no_retry_after_the_three_hundred_sixty_first_attempt() -> None:
    assert RetryPolicy().next_attempt_at(361, T0) is None


def test_asking_before_any_failed_attempt_is_a_local_bug() -> None:
    with pytest.raises(ValueError, match="at least one"):
        RetryPolicy().next_attempt_at(0, T0)


def test_window_is_about_sixty_minutes_when_the_receiver_fails_fast() -> None:
    policy = RetryPolicy()
    ended = T0
    attempts = 1
    while (next_at := policy.next_attempt_at(attempts, ended)) is not None:
        ended = next_at
        attempts += 1
    assert attempts == 361
    assert ended - T0 == timedelta(minutes=60)
