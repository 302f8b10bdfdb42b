"""What a circuit's grid meter tells the allocator (docs/power.md "Grid meters")."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from chargenet.domain import power
from chargenet.domain.grid_meters import (
    Draw,
    GridReading,
    MeterFault,
    by_phase,
    draw_amps,
    draw_estimate,
    judge,
    known_draw,
    other_load,
    status,
)

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_the_other_load_is_the_measurement_less_what_the_sessions_below_draw_on_each_phase() -> None:
    draws = [Draw(("L1", "L2", "L3"), 10.0), Draw(("L2",), 16.0)]
    assert other_load({"L1": 25.0, "L2": 40.0, "L3": 10.0}, draws) == {"L1": 15.0, "L2": 14.0, "L3": 0.0}


def test_a_meter_reading_less_than_the_sessions_draw_leaves_no_negative_other_load() -> None:
    assert other_load({"L1": 5.0}, [Draw(("L1",), 8.0)]) == {"L1": 0.0}


def test_nonsense_readings_are_named_and_sound_ones_pass() -> None:
    assert judge((10.0, 12.5, 0.0)) is None
    assert judge((10.0, math.nan, 0.0)) is MeterFault.NOT_A_NUMBER
    assert judge((10.0, -3.0, 0.0)) is MeterFault.NEGATIVE
    assert judge((10.0, 5000.0, 0.0)) is MeterFault.ABOVE_BOUND
    assert judge((10.0, 50.0, 0.0), max_reading_a=40.0) is MeterFault.ABOVE_BOUND
    assert judge(None) is MeterFault.NO_CURRENTS


def test_a_meter_silent_longer_than_the_setting_tells_nothing_and_says_so() -> None:
    reading = GridReading(NOW - timedelta(seconds=6), by_phase((10.0, 10.0, 10.0)))
    assert status(reading, NOW).fault is MeterFault.SILENT
    assert status(reading, NOW).measured_a is None
    assert status(reading, NOW, silent_after=timedelta(seconds=10)).measured_a == {"L1": 10.0, "L2": 10.0, "L3": 10.0}
    assert status(None, NOW).fault is MeterFault.SILENT


def test_a_nonsense_reading_tells_nothing_however_fresh() -> None:
    reading = GridReading(NOW, {}, MeterFault.NEGATIVE)
    assert status(reading, NOW).measured_a is None
    assert status(reading, NOW).fault is MeterFault.NEGATIVE


def test_a_sessions_draw_per_phase_is_its_power_spread_over_its_phases() -> None:
    assert draw_amps(22_080.0, 3, 230.0) == 32.0
    assert draw_amps(3_680.0, 1, 230.0) == 16.0
    assert draw_amps(None, 3, 230.0) is None


def test_measured_other_load_lowers_what_a_circuit_shares_and_a_silent_meter_falls_back_to_its_limit() -> None:
    station = power.Station("ST-1", "grid", ("L1", "L2", "L3"))
    session = power.Session("1", "ST-1", 1, NOW, max_current_a=32.0)
    loaded = power.Circuit("grid", None, 40.0, metered=True, other_load_a={"L1": 20.0, "L2": 20.0, "L3": 20.0})
    silent = power.Circuit("grid", None, 40.0, metered=True, other_load_a=None)
    assert power.allocate([loaded], [station], [session], NOW).allowances[0].amps == 20.0
    fallback = power.allocate([silent], [station], [session], NOW)
    assert fallback.allowances[0].amps == 32.0
    assert fallback.circuits[0].meter_silent


def test_a_sessions_draw_is_what_it_reported_within_its_allowance_or_the_allowance_sent_since() -> None:
    before, after = NOW - timedelta(seconds=20), NOW - timedelta(seconds=5)
    assert draw_estimate(20.0, after, 12.0, before) == 12.0  # reported before the decrease took hold
    assert draw_estimate(8.0, after, 12.0, before) == 8.0  # a vehicle drawing less than it may
    assert draw_estimate(0.0, before, 12.0, after) == 12.0  # nothing reported since the increase
    assert draw_estimate(None, None, None, None) is None


def test_what_is_taken_off_a_reading_is_what_a_session_reported_within_its_allowance_never_more() -> None:
    assert known_draw(20.0, 12.0) == 12.0  # reported before a decrease: it draws 12 A at most now
    assert known_draw(8.0, 30.0) == 8.0  # a smaller vehicle than its allowance, or one nearly full
    assert known_draw(None, 30.0) == 0.0  # before its first report: what it draws shows as other load
