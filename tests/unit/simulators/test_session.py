from __future__ import annotations

import pytest

from chargenet.simulators.session import Reading, meter_curve


def test_the_meter_rises_evenly_to_the_session_energy_at_each_interval() -> None:
    assert meter_curve(3000, 15.0, 5.0) == [Reading(5.0, 1000), Reading(5.0, 2000), Reading(5.0, 3000)]


def test_an_interval_longer_than_the_session_still_reads_the_energy_once() -> None:
    assert meter_curve(7000, 2.0, 5.0) == [Reading(2.0, 7000)]


@pytest.mark.parametrize("seconds", [0.0, -1.0], ids=["no duration", "negative duration"])
def test_a_session_of_no_duration_has_no_readings(seconds: float) -> None:
    assert meter_curve(7000, seconds, 5.0) == []


def test_readings_are_whole_watt_hours_ending_on_the_total() -> None:
    readings = meter_curve(1000, 3.0, 1.0)
    assert [r.wh for r in readings] == [333, 666, 1000]
