from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chargenet.domain.webhook_recovery import check_window
from chargenet.errors import InvalidInput

NOW = datetime(2026, 7, 8, 12, 0, tzinfo=UTC)
WEEK = timedelta(days=7)


def test_a_lost_day_within_the_retention_may_be_recovered() -> None:
    window = check_window(NOW - timedelta(days=2), NOW - timedelta(days=1), now=NOW, retention=WEEK)
    assert (window.since, window.until) == (NOW - timedelta(days=2), NOW - timedelta(days=1))


def test_the_whole_retention_up_to_now_may_be_recovered() -> None:
    check_window(NOW - WEEK, NOW, now=NOW, retention=WEEK)


@pytest.mark.parametrize(
    ("since", "until", "field"),
    [
        (NOW - timedelta(hours=1), NOW + timedelta(seconds=1), "until"),
        (NOW + timedelta(hours=1), NOW + timedelta(hours=2), "until"),
        (NOW - WEEK - timedelta(seconds=1), NOW, "since"),
        (NOW - timedelta(days=10), NOW - timedelta(days=9), "since"),
        (NOW - timedelta(hours=1), NOW - timedelta(hours=1), "since"),
        (NOW - timedelta(hours=1), NOW - timedelta(hours=2), "since"),
    ],
)
def test_a_window_in_the_future_past_the_retention_or_backwards_is_refused_naming_its_field(
    since: datetime, until: datetime, field: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_window(since, until, now=NOW, retention=WEEK)
    assert refused.value.field == field
