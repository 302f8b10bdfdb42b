from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chargenet.domain.samples import SPACING, Thinning

T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def test_the_first_sample_of_a_session_is_kept() -> None:
    assert Thinning().keep(1, T0)


def test_a_sample_closer_than_the_spacing_to_the_last_kept_is_dropped() -> None:
    thinning = Thinning()
    thinning.keep(1, T0)
    assert not thinning.keep(1, T0 + SPACING - timedelta(seconds=1))


def test_a_sample_a_spacing_after_the_last_kept_is_kept() -> None:
    thinning = Thinning()
    thinning.keep(1, T0)
    thinning.keep(1, T0 + timedelta(seconds=10))
    assert thinning.keep(1, T0 + SPACING)


def test_a_polled_meter_keeps_one_sample_per_spacing() -> None:
    thinning = Thinning()
    kept = [second for second in range(300) if thinning.keep(7, T0 + timedelta(seconds=second))]
    assert kept == [0, 30, 60, 90, 120, 150, 180, 210, 240, 270]


def test_sessions_are_thinned_apart() -> None:
    thinning = Thinning()
    thinning.keep(1, T0)
    assert thinning.keep(2, T0)


def test_values_sent_late_and_older_than_the_last_kept_are_thinned_alike() -> None:
    thinning = Thinning()
    thinning.keep(1, T0)
    assert not thinning.keep(1, T0 - timedelta(seconds=5))
    assert thinning.keep(1, T0 - SPACING)


def test_a_forgotten_session_starts_again() -> None:
    thinning = Thinning()
    thinning.keep(1, T0)
    thinning.forget(1)
    assert thinning.keep(1, T0 + timedelta(seconds=1))


def test_beyond_its_bound_the_least_recent_session_is_forgotten() -> None:
    thinning = Thinning(max_sessions=2)
    thinning.keep(1, T0)
    thinning.keep(2, T0)
    thinning.keep(3, T0)
    assert thinning.keep(1, T0 + timedelta(seconds=1))
    assert not thinning.keep(3, T0 + timedelta(seconds=1))
