"""Times as a reader reads them (chargenet/domain/local_time.py), across both DST changes of 2026 in Brussels:
clocks go forward on 29 March (02:00 +01:00 becomes 03:00 +02:00) and back on 25 October (03:00 +02:00 becomes
02:00 +01:00). "Now" comes from an injected clock."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from chargenet.clock import ManualClock
from chargenet.domain.local_time import (
    DEFAULT_ZONE,
    LocalTime,
    NonexistentLocalTime,
    reader_zone,
    zone_named,
)
from chargenet.errors import InvalidInput

BRUSSELS = LocalTime(ZoneInfo("Europe/Brussels"))
SPRING = date(2026, 3, 29)
AUTUMN = date(2026, 10, 25)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def test_a_zone_of_the_tz_database_is_accepted_by_its_name() -> None:
    assert zone_named(" America/New_York ").key == "America/New_York"


@pytest.mark.parametrize("name", ["Mars/Olympus_Mons", "Europe/brussels", "../../etc/passwd", "localtime", "x" * 300])
def test_a_name_the_tz_database_does_not_know_is_refused_naming_it(name: str) -> None:
    with pytest.raises(InvalidInput, match="is not a time zone of the tz database") as refused:
        zone_named(name)
    assert refused.value.field == "time_zone"
    assert name[:20] in refused.value.detail


def test_a_blank_name_is_refused() -> None:
    with pytest.raises(InvalidInput, match="required"):
        zone_named("  ")


def test_a_reader_reads_in_their_own_zone_else_their_companys_else_brussels() -> None:
    assert reader_zone("Asia/Tokyo", "America/New_York").name == "Asia/Tokyo"
    assert reader_zone(None, "America/New_York").name == "America/New_York"
    assert reader_zone(None, None).name == DEFAULT_ZONE
    assert reader_zone("Gone/Zone", "Also/Gone").name == DEFAULT_ZONE  # a stored name tzdata dropped: no failure


def test_a_summer_time_reads_as_the_brussels_wall_clock_without_offset() -> None:
    # What a partner's event says as 2026-07-01T14:03:22+02:00.
    assert BRUSSELS.text(utc(2026, 7, 1, 12, 3, 22)) == "2026-07-01 14:03:22"
    assert BRUSSELS.text(utc(2026, 1, 15, 12, 3, 22)) == "2026-01-15 13:03:22"
    assert BRUSSELS.text(utc(2026, 7, 1, 12, 3, 22), seconds=False) == "2026-07-01 14:03"
    assert BRUSSELS.text(utc(2026, 7, 1, 12, 3, 22, 456_000), millis=True) == "2026-07-01 14:03:22.456"


def test_times_on_the_day_clocks_go_back_carry_their_offset_so_the_two_0230s_differ() -> None:
    first, second = utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 1, 30)
    assert BRUSSELS.text(first) == "2026-10-25 02:30:00 +02:00"
    assert BRUSSELS.text(second) == "2026-10-25 02:30:00 +01:00"
    assert BRUSSELS.text(utc(2026, 10, 25, 12, 0), date_part=False) == "13:00:00 +01:00"


def test_times_on_the_day_clocks_go_forward_carry_their_offset() -> None:
    assert BRUSSELS.text(utc(2026, 3, 29, 0, 59)) == "2026-03-29 01:59:00 +01:00"
    assert BRUSSELS.text(utc(2026, 3, 29, 1, 0)) == "2026-03-29 03:00:00 +02:00"
    assert not BRUSSELS.offset_changes_on(date(2026, 3, 30))


def test_exports_carry_the_offset_always() -> None:
    assert BRUSSELS.iso(utc(2026, 7, 1, 12, 3, 22)) == "2026-07-01T14:03:22+02:00"
    assert BRUSSELS.iso(utc(2026, 12, 1, 12, 3, 22)) == "2026-12-01T13:03:22+01:00"


def test_a_naive_instant_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        BRUSSELS.text(datetime(2026, 7, 1, 12, 0))


def test_today_is_the_readers_day_not_utcs() -> None:
    clock = ManualClock(utc(2026, 6, 30, 22, 30))  # 00:30 on 1 July in Brussels
    assert BRUSSELS.today(clock.now()) == date(2026, 7, 1)
    assert LocalTime(ZoneInfo("America/New_York")).today(clock.now()) == date(2026, 6, 30)


def test_a_local_day_starts_at_its_midnight_as_an_instant() -> None:
    assert BRUSSELS.day_bounds(date(2026, 7, 1)) == (utc(2026, 6, 30, 22), utc(2026, 7, 1, 22))


def test_the_day_clocks_go_forward_is_23_hours() -> None:
    start, end = BRUSSELS.day_bounds(SPRING)
    assert (start, end) == (utc(2026, 3, 28, 23), utc(2026, 3, 29, 22))
    assert end - start == timedelta(hours=23)


def test_the_day_clocks_go_back_is_25_hours() -> None:
    start, end = BRUSSELS.day_bounds(AUTUMN)
    assert (start, end) == (utc(2026, 10, 24, 22), utc(2026, 10, 25, 23))
    assert end - start == timedelta(hours=25)


def test_a_day_whose_midnight_was_skipped_starts_when_the_gap_ends() -> None:
    # Havana moved its clocks from 00:00 to 01:00 on 8 March 2026: that day starts at 01:00 -04:00.
    havana = LocalTime(ZoneInfo("America/Havana"))
    start, end = havana.day_bounds(date(2026, 3, 8))
    assert havana.iso(start) == "2026-03-08T01:00:00-04:00"
    assert end - start == timedelta(hours=23)


def test_the_last_days_run_oldest_first_each_to_the_next_ones_start() -> None:
    clock = ManualClock(utc(2026, 10, 26, 9, 0))
    days = BRUSSELS.days_up_to(BRUSSELS.today(clock.now()), 3)
    assert [day for day, _, _ in days] == [date(2026, 10, 24), AUTUMN, date(2026, 10, 26)]
    assert [until - since for _, since, until in days] == [
        timedelta(hours=24),
        timedelta(hours=25),
        timedelta(hours=24),
    ]
    assert all(days[n][2] == days[n + 1][1] for n in range(2))


def test_an_ordinary_wall_clock_time_is_one_instant() -> None:
    resolved = BRUSSELS.resolve(datetime(2026, 7, 1, 14, 3))
    assert resolved.instant == utc(2026, 7, 1, 12, 3)
    assert resolved.other is None and resolved.note is None


def test_a_time_the_clocks_skipped_is_refused_naming_the_times_on_either_side() -> None:
    with pytest.raises(NonexistentLocalTime) as refused:
        BRUSSELS.resolve(datetime(2026, 3, 29, 2, 30), field="since")
    gap = refused.value
    assert gap.detail == (
        "02:30 does not exist on 2026-03-29 in Europe/Brussels: the clocks went forward from +01:00 to +02:00; "
        "choose 01:59 or 03:00"
    )
    assert gap.field == "since"
    assert (gap.before.local, gap.before.instant) == (datetime(2026, 3, 29, 1, 59), utc(2026, 3, 29, 0, 59))
    assert (gap.after.local, gap.after.instant) == (datetime(2026, 3, 29, 3, 0), utc(2026, 3, 29, 1, 0))


def test_a_skipped_time_with_seconds_is_answered_to_the_second() -> None:
    with pytest.raises(NonexistentLocalTime, match="choose 01:59:59 or 03:00:00"):
        BRUSSELS.resolve(datetime(2026, 3, 29, 2, 0, 30))


def test_a_time_that_happened_twice_is_the_first_and_the_answer_says_so() -> None:
    resolved = BRUSSELS.resolve(datetime(2026, 10, 25, 2, 30))
    assert resolved.instant == utc(2026, 10, 25, 0, 30)
    assert resolved.note == (
        "02:30 happened twice on 2026-10-25 in Europe/Brussels; read as the first, 2026-10-25 02:30 +02:00"
    )
    assert resolved.other is not None and resolved.other.instant == utc(2026, 10, 25, 1, 30)


def test_the_reader_may_choose_the_second_reading_by_its_offset() -> None:
    resolved = BRUSSELS.resolve(datetime(2026, 10, 25, 2, 30), offset=timedelta(hours=1))
    assert resolved.instant == utc(2026, 10, 25, 1, 30)
    assert resolved.note is not None and "read as the second, 2026-10-25 02:30 +01:00" in resolved.note


def test_an_offset_that_fits_neither_reading_leaves_an_ordinary_time_alone() -> None:
    assert BRUSSELS.resolve(datetime(2026, 7, 1, 14, 0), offset=timedelta(hours=1)).instant == utc(2026, 7, 1, 12)


def test_a_field_value_is_read_in_the_zone_and_a_value_with_an_offset_is_that_instant() -> None:
    assert BRUSSELS.resolve_text("", field="since") is None
    typed = BRUSSELS.resolve_text("2026-10-25T02:30", offset_text="+01:00", field="since")
    assert typed is not None and typed.instant == utc(2026, 10, 25, 1, 30)
    linked = BRUSSELS.resolve_text("2026-10-25T00:00:00+02:00", field="since")
    assert (
        linked is not None
        and linked.instant == utc(2026, 10, 24, 22)
        and linked.chosen.field_value() == ("2026-10-25T00:00")
    )


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01T00:00", "2026-07-01T25:00"])
def test_a_field_value_that_is_no_date_and_time_is_refused(value: str) -> None:
    with pytest.raises(InvalidInput, match="is not a date and time"):
        BRUSSELS.resolve_text(value, field="until")


def test_an_offset_choice_that_is_no_offset_is_refused() -> None:
    with pytest.raises(InvalidInput, match="'later' is not an offset"):
        BRUSSELS.resolve_text("2026-10-25T02:30", offset_text="later", field="until")
