"""Day boundaries of the overview's energy chart: UTC midnights."""

from __future__ import annotations

from datetime import UTC, date, datetime

from chargenet.services.overview import day_bounds


def test_days_run_from_utc_midnight_to_utc_midnight_oldest_first() -> None:
    bounds = day_bounds(date(2026, 7, 1), 2)
    assert bounds == [
        (date(2026, 6, 30), datetime(2026, 6, 30, tzinfo=UTC), datetime(2026, 7, 1, tzinfo=UTC)),
        (date(2026, 7, 1), datetime(2026, 7, 1, tzinfo=UTC), datetime(2026, 7, 2, tzinfo=UTC)),
    ]
