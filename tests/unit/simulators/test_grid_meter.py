"""The meter simulator playing a grid meter: a base load plus what the simulated stations draw, at every read."""

from __future__ import annotations

from datetime import UTC, datetime

from chargenet.meters.profiles import get_profile
from chargenet.simulators.meter import grid_meter


def test_a_grid_meter_reads_its_base_load_plus_what_the_stations_draw_now() -> None:
    drawn = [10.0]
    meter = grid_meter(get_profile("sdm630"), 1, (5.0, 6.0, 7.0), lambda: drawn[0])
    meter.advance(datetime(2026, 11, 29, 12, 0, tzinfo=UTC))
    assert meter.currents_a == (15.0, 16.0, 17.0)
    drawn[0] = 0.0
    meter.advance(datetime(2026, 11, 29, 12, 0, 1, tzinfo=UTC))
    assert meter.currents_a == (5.0, 6.0, 7.0)
