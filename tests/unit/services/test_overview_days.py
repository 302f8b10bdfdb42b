"""Day boundaries of the overview's energy chart: midnights of a time zone, as UTC instants."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from chargenet.services.overview import day_bounds


def test_utc_days_run_from_midnight_to_midnight() -> None:
    bounds = day_bounds(date(2026, 7, 1), UTC, 2)
    assert bounds == [
        (date(2026, 6, 30), datetime(2026, 6, 30, tzinfo=UTC), datetime(2026, 7, 1, tzinfo=UTC)),
        (date(2026, 7, 1), datetime(2026, 7, 1, tzinfo=UTC), datetime(2026, 7, 2, tzinfo=UTC)),
    ]


def test_a_day_of_a_daylight_saving_change_is_bounded_by_its_own_midnights() -> None:
    (day,) = day_bounds(date(2026, 3, 29), ZoneInfo("Europe/Brussels"), 1)
    assert day[1] == datetime(2026, 3, 28, 23, tzinfo=UTC)
    assert day[2] - day[1] == timedelta(hours=23)
