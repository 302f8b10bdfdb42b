"""Invariants of the detector over arbitrary sequences of readings, faults and time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from chargenet.meters.detect import (
    DetectorEvent,
    DetectorState,
    SessionResumed,
    SessionStarted,
    SessionStopped,
    Thresholds,
    on_reading,
    tick,
)
from chargenet.meters.readings import Quantity, Reading

T0 = datetime(2026, 7, 1, tzinfo=UTC)
THRESHOLDS = Thresholds()

# One input: seconds since the previous one, then a failure (None) or (amps, energy delta in Wh, sentinel?).
inputs = st.lists(
    st.tuples(
        st.floats(min_value=0.5, max_value=1200),
        st.none()
        | st.tuples(
            st.floats(min_value=0, max_value=64),
            st.integers(min_value=-2_000_000, max_value=2_000) | st.just(0),
            st.booleans(),
        ),
    ),
    max_size=120,
)


def run(sequence: list[tuple[float, tuple[float, int, bool] | None]]) -> tuple[list[DetectorEvent], list[int]]:
    state, now, energy = DetectorState(), T0, 10_000_000
    events: list[DetectorEvent] = []
    seen: list[int] = []
    for seconds, item in sequence:
        now += timedelta(seconds=seconds)
        if item is None:
            step = tick(state, now, THRESHOLDS)
        else:
            amps, delta, sentinel = item
            energy = max(energy + delta, 0)
            seen.append(energy)
            reading = Reading(
                energy_wh=energy,
                currents_a=(amps, 0.0, 0.0),
                power_w=amps * 230,
                sentinels=frozenset({Quantity.ENERGY}) if sentinel else frozenset(),
            )
            step = on_reading(state, reading, now, THRESHOLDS)
        state = step.state
        events += step.events
    return events, seen


@settings(max_examples=300, deadline=None)
@given(inputs)
def test_sessions_alternate_and_never_go_negative(sequence: list[tuple[float, tuple[float, int, bool] | None]]) -> None:
    events, _ = run(sequence)
    open_start: int | None = None
    for event in events:
        if isinstance(event, SessionStarted):
            assert open_start is None
            open_start = event.meter_start_wh
        elif isinstance(event, SessionStopped):
            assert open_start == event.meter_start_wh
            assert event.meter_stop_wh >= event.meter_start_wh
            open_start = None
        assert not isinstance(event, SessionResumed)


@settings(max_examples=300, deadline=None)
@given(inputs)
def test_meter_start_is_a_counter_value_the_meter_reported(
    sequence: list[tuple[float, tuple[float, int, bool] | None]],
) -> None:
    events, seen = run(sequence)
    for event in events:
        if isinstance(event, SessionStarted):
            assert event.meter_start_wh in seen


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(min_value=1, max_value=60), st.floats(min_value=0, max_value=2.99)), max_size=200))
def test_load_under_the_start_current_never_starts_a_session(readings: list[tuple[float, float]]) -> None:
    state, now, energy = DetectorState(), T0, 1_000
    for seconds, amps in readings:
        now += timedelta(seconds=seconds)
        energy += int(amps * 230 * seconds / 3600)
        step = on_reading(state, Reading(energy_wh=energy, currents_a=(amps, amps, amps)), now, THRESHOLDS)
        state = step.state
        assert not any(isinstance(e, SessionStarted) for e in step.events)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0.1, max_value=60), max_size=100))
def test_failures_shorter_than_the_outage_never_end_a_session(gaps: list[float]) -> None:
    state, now = DetectorState(), T0
    for _ in range(2):
        now += timedelta(seconds=5)
        state = on_reading(state, Reading(energy_wh=5_000, currents_a=(16.0,)), now, THRESHOLDS).state
    heard = now
    for gap in gaps:
        now += timedelta(seconds=gap)
        step = tick(state, now, THRESHOLDS)
        state = step.state
        stopped = [e for e in step.events if isinstance(e, SessionStopped)]
        if (now - heard).total_seconds() < THRESHOLDS.outage_close_s:
            assert stopped == [] and state.session_open
        else:
            assert len(stopped) == 1 and not state.session_open
            break
