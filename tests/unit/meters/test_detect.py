from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chargenet.domain.events import StopReason
from chargenet.errors import InvalidInput
from chargenet.meters.detect import (
    DetectorEvent,
    DetectorState,
    Mark,
    MeterReset,
    Phase,
    ReadingRejected,
    Rejection,
    SessionResumed,
    SessionStarted,
    SessionStopped,
    Thresholds,
    on_reading,
    restore,
    tick,
)
from chargenet.meters.readings import Quantity, Reading

T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


class Meter:
    """Drives the detector as a poller would: a reading or a failure every `interval` seconds."""

    def __init__(self, thresholds: Thresholds | None = None, state: DetectorState | None = None) -> None:
        self.thresholds = thresholds or Thresholds()
        self.state = state or DetectorState()
        self.now = T0
        self.energy = 1_000_000
        self.events: list[DetectorEvent] = []

    def read(
        self, amps: float, *, seconds: float = 5, energy: int | None = None, **fields: object
    ) -> list[DetectorEvent]:
        self.now += timedelta(seconds=seconds)
        if energy is None:
            self.energy += int(amps * 230 * 3 * seconds / 3600)
            energy = self.energy
        reading = Reading(energy_wh=energy, currents_a=(amps, amps, amps), power_w=amps * 690, **fields)  # type: ignore[arg-type]
        return self._apply(on_reading(self.state, reading, self.now, self.thresholds))

    def read_power(self, watts: float, *, seconds: float = 5) -> list[DetectorEvent]:
        self.now += timedelta(seconds=seconds)
        self.energy += int(watts * seconds / 3600)
        reading = Reading(energy_wh=self.energy, power_w=watts)
        return self._apply(on_reading(self.state, reading, self.now, self.thresholds))

    def fail(self, *, seconds: float = 5) -> list[DetectorEvent]:
        self.now += timedelta(seconds=seconds)
        return self._apply(tick(self.state, self.now, self.thresholds))

    def charge(self, amps: float, seconds: float, *, interval: float = 5) -> list[DetectorEvent]:
        events: list[DetectorEvent] = []
        for _ in range(int(seconds / interval)):
            events += self.read(amps, seconds=interval)
        return events

    def _apply(self, step: object) -> list[DetectorEvent]:
        from chargenet.meters.detect import Step

        assert isinstance(step, Step)
        self.state = step.state
        self.events += step.events
        return list(step.events)

    def sessions(self) -> list[DetectorEvent]:
        return [e for e in self.events if isinstance(e, SessionStarted | SessionStopped | SessionResumed)]


def test_standby_draw_for_hours_starts_no_session() -> None:
    meter = Meter()
    for hour in range(6):
        for watts in (30, 120, 300):
            meter.charge(watts / 230 / 3, 1200) if hour % 2 else meter.charge(watts / 230, 1200)
    assert meter.sessions() == []


def test_power_only_meter_standby_starts_no_session() -> None:
    meter = Meter()
    for _ in range(2000):
        meter.read_power(300)
    assert meter.sessions() == []


def test_one_reading_over_threshold_starts_no_session() -> None:
    meter = Meter()
    meter.read(0)
    meter.read(16)
    meter.read(0.5)
    assert meter.sessions() == []


def test_two_consecutive_readings_over_threshold_start_a_session_from_the_first() -> None:
    meter = Meter()
    meter.read(0)
    meter.read(16)
    first_energy = meter.energy
    started = meter.read(16)
    assert started == [SessionStarted(first_energy, T0 + timedelta(seconds=10), T0 + timedelta(seconds=15))]
    assert meter.state.phase is Phase.CHARGING


def test_reading_between_thresholds_after_one_over_them_disarms() -> None:
    meter = Meter()
    meter.read(16)
    meter.read(2)
    meter.read(16)
    assert meter.sessions() == []
    assert meter.state.phase is Phase.ARMING


def test_read_failure_between_two_readings_over_threshold_neither_confirms_nor_disarms() -> None:
    meter = Meter()
    meter.read(16)
    meter.fail()
    assert meter.sessions() == []
    meter.read(16)
    assert [type(e) for e in meter.sessions()] == [SessionStarted]


def test_power_only_meter_starts_at_500_watts() -> None:
    meter = Meter()
    meter.read_power(499)
    meter.read_power(500)
    meter.read_power(500)
    assert [type(e) for e in meter.sessions()] == [SessionStarted]


def test_session_stops_after_the_grace_period_with_reason_other_at_the_last_charging_reading() -> None:
    meter = Meter()
    meter.charge(16, 600)
    last_charging = meter.energy
    meter.charge(0, 175)
    assert [type(e) for e in meter.sessions()] == [SessionStarted]
    meter.charge(0, 10)
    stopped = meter.sessions()[-1]
    assert isinstance(stopped, SessionStopped)
    assert stopped.reason is StopReason.OTHER
    assert stopped.meter_stop_wh == last_charging


def test_stop_needs_power_under_the_stop_threshold_too() -> None:
    meter = Meter()
    meter.charge(16, 60)
    for _ in range(100):
        meter.read(0.9)  # 0.9 A on each phase is 621 W
    assert [type(e) for e in meter.sessions()] == [SessionStarted]


def test_phase_switch_pause_shorter_than_the_grace_period_keeps_one_session() -> None:
    meter = Meter()
    meter.charge(16, 600)
    meter.charge(0, 150)
    meter.charge(6, 600)
    meter.charge(0, 200)
    sessions = meter.sessions()
    assert [type(e) for e in sessions] == [SessionStarted, SessionStopped]


def test_five_minute_pause_is_one_session_with_a_grace_period_longer_than_it() -> None:
    meter = Meter(Thresholds(stop_grace_s=360))
    meter.charge(16, 600)
    meter.charge(0, 300)
    meter.charge(16, 600)
    meter.charge(0, 400)
    assert [type(e) for e in meter.sessions()] == [SessionStarted, SessionStopped]


def test_between_thresholds_during_the_grace_period_restarts_it() -> None:
    meter = Meter()
    meter.charge(16, 60)
    meter.charge(0, 120)
    meter.read(2)
    meter.charge(0, 120)
    assert [type(e) for e in meter.sessions()] == [SessionStarted]


def test_read_failures_never_end_a_session() -> None:
    meter = Meter()
    meter.charge(16, 60)
    for _ in range(int(899 / 5)):
        meter.fail()
    assert [type(e) for e in meter.sessions()] == [SessionStarted]


def test_outage_closes_the_session_at_the_last_good_reading_with_power_loss() -> None:
    meter = Meter()
    meter.charge(16, 60)
    last_good = meter.energy
    heard = meter.now
    meter.fail(seconds=899)
    assert meter.state.phase is Phase.CHARGING
    meter.fail(seconds=1)
    start, stopped = meter.sessions()
    assert isinstance(start, SessionStarted)
    assert stopped == SessionStopped(
        start.meter_start_wh, last_good, StopReason.POWER_LOSS, heard + timedelta(seconds=900)
    )


def test_meter_silent_ten_minutes_mid_session_gives_one_session_closed_when_it_returns() -> None:
    meter = Meter()
    meter.charge(16, 300)
    meter.fail(seconds=600)
    meter.read(16, seconds=5, energy=meter.energy + 20_000)
    meter.charge(16, 300)
    meter.charge(0, 200)
    sessions = meter.sessions()
    assert [type(e) for e in sessions] == [SessionStarted, SessionStopped]
    assert sessions[-1].reason is StopReason.OTHER  # type: ignore[union-attr]


def test_reading_after_an_outage_closes_first_then_counts_towards_a_new_session() -> None:
    meter = Meter()
    meter.charge(16, 60)
    meter.read(16, seconds=1000)
    meter.read(16)
    sessions = meter.sessions()
    assert [type(e) for e in sessions] == [SessionStarted, SessionStopped, SessionStarted]
    assert sessions[1].reason is StopReason.POWER_LOSS  # type: ignore[union-attr]


def test_arming_expires_after_an_outage() -> None:
    meter = Meter()
    meter.read(16)
    meter.fail(seconds=900)
    assert meter.state.phase is Phase.IDLE


def test_falling_energy_is_rejected() -> None:
    meter = Meter()
    meter.read(0)
    events = meter.read(0, energy=meter.energy - 500)
    assert events == [ReadingRejected(Rejection.ENERGY_FELL, meter.now)]


def test_fall_within_the_counter_resolution_is_not_a_fall() -> None:
    meter = Meter()
    meter.read(0)
    assert meter.read(0, energy=meter.energy - 10) == []
    assert meter.state.baseline is not None and meter.state.baseline.energy_wh == meter.energy


def test_zero_after_non_zero_is_rejected() -> None:
    meter = Meter()
    meter.read(0)
    assert meter.read(0, energy=0) == [ReadingRejected(Rejection.ZERO_AFTER_NONZERO, meter.now)]


def test_energy_jump_beyond_max_power_is_rejected_and_the_next_normal_reading_is_accepted() -> None:
    meter = Meter()
    meter.charge(16, 60)
    assert meter.read(16, energy=meter.energy + 10_000) == [ReadingRejected(Rejection.ENERGY_JUMP, meter.now)]
    assert meter.read(16) == []
    assert meter.state.suspects == ()


def test_sentinel_reading_is_rejected() -> None:
    meter = Meter()
    events = meter.read(0, sentinels=frozenset({Quantity.ENERGY}))
    assert events == [ReadingRejected(Rejection.SENTINEL, meter.now)]


def test_reading_without_energy_is_rejected_as_a_sentinel() -> None:
    step = on_reading(DetectorState(), Reading(energy_wh=None, currents_a=(0.0,)), T0, Thresholds())
    assert step.events == (ReadingRejected(Rejection.SENTINEL, T0),)


def test_power_beyond_twice_the_maximum_is_rejected() -> None:
    step = on_reading(DetectorState(), Reading(energy_wh=1, power_w=200_000.0), T0, Thresholds())
    assert step.events == (ReadingRejected(Rejection.POWER_IMPLAUSIBLE, T0),)


def test_persistent_fall_closes_the_session_at_the_last_good_value_and_moves_the_baseline() -> None:
    meter = Meter()
    meter.charge(16, 300)
    last_good = meter.energy
    meter.read(16, energy=100)
    meter.read(16, energy=110)
    events = meter.read(16, energy=120)
    stop = next(e for e in events if isinstance(e, SessionStopped))
    assert stop.meter_stop_wh == last_good and stop.reason is StopReason.OTHER
    assert MeterReset(last_good, 120, meter.now) in events
    assert meter.state.baseline == Mark(120, meter.now)


def test_charging_after_a_meter_reset_starts_a_new_session_on_the_new_counter() -> None:
    meter = Meter()
    meter.charge(16, 300)
    for energy in (100, 110, 120):
        meter.read(16, energy=energy)
    meter.energy = 120
    started = [e for e in meter.read(16) if isinstance(e, SessionStarted)]
    assert started == [SessionStarted(120, meter.now - timedelta(seconds=5), meter.now)]


def test_one_glitch_low_reading_is_no_reset() -> None:
    meter = Meter()
    meter.charge(16, 60)
    meter.read(16, energy=100)
    meter.charge(16, 60)
    assert not any(isinstance(e, MeterReset) for e in meter.events)
    assert [type(e) for e in meter.sessions()] == [SessionStarted]


def test_zero_at_first_then_lifetime_total_is_not_booked_as_one_session() -> None:
    # evcc#26734: a meter reported 0 first, then its lifetime total.
    meter = Meter()
    meter.read(16, energy=0)
    meter.read(16, energy=12_000_000)
    meter.read(16, energy=12_000_020)
    meter.read(16, energy=12_000_040)
    meter.read(16, energy=12_000_060)
    starts = [e for e in meter.sessions() if isinstance(e, SessionStarted)]
    assert starts[0].meter_start_wh >= 12_000_000


def test_restored_session_still_charging_resumes_with_the_same_meter_start() -> None:
    restored = restore(
        meter_start_wh=500_000, started_at=T0, last_charging=Mark(510_000, T0), baseline=Mark(510_000, T0), now=T0
    )
    meter = Meter(state=restored)
    meter.energy = 511_000
    events = meter.read(16, seconds=60)
    assert events == [SessionResumed(500_000, meter.now)]
    meter.charge(0, 200)
    assert [type(e) for e in meter.sessions()] == [SessionResumed, SessionStopped]


def test_restored_session_no_longer_charging_closes_with_reboot_at_the_current_counter() -> None:
    restored = restore(
        meter_start_wh=500_000, started_at=T0, last_charging=Mark(510_000, T0), baseline=Mark(510_000, T0), now=T0
    )
    meter = Meter(state=restored)
    events = meter.read(0, seconds=60, energy=511_000)
    assert events == [SessionStopped(500_000, 511_000, StopReason.REBOOT, meter.now)]


def test_restored_session_counts_silence_from_the_restart() -> None:
    long_ago = T0 - timedelta(hours=2)
    restored = restore(
        meter_start_wh=1, started_at=long_ago, last_charging=Mark(2, long_ago), baseline=Mark(2, long_ago), now=T0
    )
    meter = Meter(state=restored)
    meter.fail(seconds=899)
    assert meter.sessions() == []
    meter.fail(seconds=1)
    assert [e.reason for e in meter.sessions() if isinstance(e, SessionStopped)] == [StopReason.POWER_LOSS]


def test_restart_with_a_lower_counter_makes_no_negative_session() -> None:
    restored = restore(
        meter_start_wh=500_000, started_at=T0, last_charging=Mark(510_000, T0), baseline=Mark(510_000, T0), now=T0
    )
    meter = Meter(state=restored)
    for energy in (400_000, 400_010, 400_020):
        meter.read(0, energy=energy)
    stops = [e for e in meter.sessions() if isinstance(e, SessionStopped)]
    assert len(stops) == 1 and stops[0].meter_stop_wh == 510_000


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"stop_current_a": 4.0}, "stop_current_a"),
        ({"stop_power_w": 600.0}, "stop_power_w"),
        ({"start_current_a": 0.0}, "start_current_a"),
        ({"stop_grace_s": -1.0}, "stop_grace_s"),
        ({"outage_close_s": 0.0}, "outage_close_s"),
        ({"reset_confirmations": 1}, "reset_confirmations"),
    ],
)
def test_inconsistent_thresholds_are_refused_naming_the_setting(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        Thresholds(**kwargs)  # type: ignore[arg-type]
    assert raised.value.field == field


def test_evolving_a_state_without_changes_keeps_every_field() -> None:
    from dataclasses import fields

    from chargenet.meters.detect import _evolve

    mark = Mark(5, T0)
    state = DetectorState(Phase.STOPPING, mark, T0, mark, 1, T0, mark, T0, (mark,))
    assert all(getattr(state, f.name) != f.default for f in fields(DetectorState))
    assert _evolve(state, {}) == state
