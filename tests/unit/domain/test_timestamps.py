from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chargenet.domain.timestamps import brussels_timestamp, parse_brussels_timestamp


@pytest.mark.parametrize(
    ("instant", "expected"),
    [
        # Spring forward, 2026-03-29: 02:00 CET becomes 03:00 CEST at 01:00 UTC.
        (datetime(2026, 3, 29, 0, 59, 59, 999000, tzinfo=UTC), "2026-03-29T01:59:59.999+01:00"),
        (datetime(2026, 3, 29, 1, 0, tzinfo=UTC), "2026-03-29T03:00:00.000+02:00"),
        # Fall back, 2026-10-25: 03:00 CEST becomes 02:00 CET at 01:00 UTC; 02:xx happens twice.
        (datetime(2026, 10, 25, 0, 30, tzinfo=UTC), "2026-10-25T02:30:00.000+02:00"),
        (datetime(2026, 10, 25, 1, 30, tzinfo=UTC), "2026-10-25T02:30:00.000+01:00"),
        (datetime(2026, 1, 1, 12, 0, tzinfo=UTC), "2026-01-01T13:00:00.000+01:00"),
        (datetime(2026, 7, 1, 12, 3, 22, 123000, tzinfo=UTC), "2026-07-01T14:03:22.123+02:00"),
    ],
)
def test_brussels_timestamp_follows_dst(instant: datetime, expected: str) -> None:
    assert brussels_timestamp(instant) == expected


def test_the_repeated_hour_of_fall_back_parses_to_two_different_instants() -> None:
    first = parse_brussels_timestamp("2026-10-25T02:30:00.000+02:00")
    second = parse_brussels_timestamp("2026-10-25T02:30:00.000+01:00")
    assert (second - first).total_seconds() == 3600


def test_a_local_time_skipped_by_spring_forward_is_refused() -> None:
    # 02:30 does not exist on 2026-03-29 in Brussels; with +01:00 it would be 01:30 UTC, when Brussels was at +02:00.
    with pytest.raises(ValueError, match="offset"):
        parse_brussels_timestamp("2026-03-29T02:30:00.000+01:00")


def test_naive_instant_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        brussels_timestamp(datetime(2026, 1, 1))


def test_round_trip_keeps_the_instant() -> None:
    instant = datetime(2026, 10, 25, 1, 15, 0, 250000, tzinfo=UTC)
    assert parse_brussels_timestamp(brussels_timestamp(instant)) == instant
