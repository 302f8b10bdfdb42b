"""The session detector: charging sessions inferred from meter readings, as a sans-IO state machine.

Theory of operation. A meter cannot see the plug, the vehicle or an RFID card; it sees current, power and an
energy counter. The detector turns a stream of polls into sessions with three ideas:

- Hysteresis and debounce. A session starts when the highest phase current is at least `start_current_a`
  (or power at least `start_power_w` on meters without currents) on 2 consecutive good readings, and stops
  only after every current has stayed under `stop_current_a` and power under `stop_power_w` for
  `stop_grace_s`. Standby draw (30-300 W) never reaches the start threshold; a phase switch or a vehicle
  pause shorter than the grace period does not split a session.
- The energy counter is checked before it is believed. A reading is rejected when it carries a "no value"
  sentinel, when the counter fell, fell to zero, or rose more than `max_power_w` could deliver in the time since
  the last good reading. A fall or jump that persists over `reset_confirmations` readings is a meter reset or
  replacement: the open session closes at its last good value and the baseline moves to the new counter.
- Silence is not a stop. Read failures leave the state alone; only when nothing good was heard for
  `outage_close_s` does an open session close, at its last good reading, with reason PowerLoss.

Inputs are `on_reading(state, reading, now)` and `tick(state, now)` (after a failed read, or whenever time
passes); each returns the next state and the events to act on. The state is a frozen value the shell persists,
so a restart resumes from it via `restore`.

Rule 1: every session that starts also stops exactly once, and meterStop >= meterStart.
Rule 2: meterStart is the counter at the first reading over the start threshold; meterStop the counter at the
        last reading that was not low (inferred stop, reset, outage), or the counter when a restart finds the
        meter no longer charging (Reboot).
Rule 3: only good readings move the state machine; rejected readings and read failures only age it.
Rule 4: an open session with nothing good heard for `outage_close_s` closes with PowerLoss; after a restart
        the silence is counted from the restart, not from the last reading before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from chargenet.domain.events import StopReason
from chargenet.errors import InvalidInput
from chargenet.meters.readings import Reading


class Phase(StrEnum):
    IDLE = "idle"
    ARMING = "arming"  # one reading over the start threshold; the next one decides
    CHARGING = "charging"
    STOPPING = "stopping"  # charging, but low since `low_since`; the grace period runs
    RECONCILING = "reconciling"  # restored after a restart; the first good reading decides


class Level(StrEnum):
    """What one good reading says about the load."""

    ACTIVE = "active"  # at or over the start threshold
    MID = "mid"  # between the thresholds: keeps a session going, does not start one
    LOW = "low"  # under both stop thresholds


class Rejection(StrEnum):
    SENTINEL = "sentinel"
    ENERGY_FELL = "energy_fell"
    ZERO_AFTER_NONZERO = "zero_after_nonzero"
    ENERGY_JUMP = "energy_jump"
    POWER_IMPLAUSIBLE = "power_implausible"


# The transitions a good reading causes. STOPPING -> LOW additionally ends the session once the grace period
# has passed (see `_advance`); every other side effect follows from the (from, to) pair.
TRANSITIONS: dict[Phase, dict[Level, Phase]] = {
    Phase.IDLE: {Level.ACTIVE: Phase.ARMING, Level.MID: Phase.IDLE, Level.LOW: Phase.IDLE},
    Phase.ARMING: {Level.ACTIVE: Phase.CHARGING, Level.MID: Phase.IDLE, Level.LOW: Phase.IDLE},
    Phase.CHARGING: {Level.ACTIVE: Phase.CHARGING, Level.MID: Phase.CHARGING, Level.LOW: Phase.STOPPING},
    Phase.STOPPING: {Level.ACTIVE: Phase.CHARGING, Level.MID: Phase.CHARGING, Level.LOW: Phase.STOPPING},
    Phase.RECONCILING: {Level.ACTIVE: Phase.CHARGING, Level.MID: Phase.CHARGING, Level.LOW: Phase.IDLE},
}

OPEN_PHASES = frozenset({Phase.CHARGING, Phase.STOPPING, Phase.RECONCILING})


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Detector settings; the defaults are decisions.md §4 "Meters"."""

    start_current_a: float = 3.0
    stop_current_a: float = 1.0
    start_power_w: float = 500.0
    stop_power_w: float = 200.0
    stop_grace_s: float = 180.0
    outage_close_s: float = 900.0
    # 3 x 63 A x 230 V is 43.5 kW; a counter rising faster than twice this is not measuring a charger.
    max_power_w: float = 50_000.0
    reset_confirmations: int = 3
    energy_resolution_wh: int = 10

    def __post_init__(self) -> None:
        for name in ("start_current_a", "start_power_w", "max_power_w"):
            if not getattr(self, name) > 0:
                raise InvalidInput("must be greater than 0", field=name)
        for name in ("stop_current_a", "stop_power_w", "stop_grace_s", "energy_resolution_wh"):
            if not getattr(self, name) >= 0:
                raise InvalidInput("must not be negative", field=name)
        if self.stop_current_a > self.start_current_a:
            raise InvalidInput("must not be above the start current", field="stop_current_a")
        if self.stop_power_w > self.start_power_w:
            raise InvalidInput("must not be above the start power", field="stop_power_w")
        if not self.outage_close_s > 0:
            raise InvalidInput("must be greater than 0", field="outage_close_s")
        if self.reset_confirmations < 2:
            raise InvalidInput("must be at least 2", field="reset_confirmations")


@dataclass(frozen=True, slots=True)
class Mark:
    """A good reading's counter value and time."""

    energy_wh: int
    at: datetime


@dataclass(frozen=True, slots=True)
class DetectorState:
    phase: Phase = Phase.IDLE
    baseline: Mark | None = None  # the last good reading: what the next one is checked against
    last_heard: datetime | None = None  # the last good reading, or the restart; the outage clock runs from here
    first_active: Mark | None = None  # ARMING: the candidate meterStart
    meter_start_wh: int | None = None  # an open session's meterStart
    started_at: datetime | None = None
    last_charging: Mark | None = None  # an open session's last reading that was not low: its meterStop
    low_since: datetime | None = None  # STOPPING: when the load fell under the stop thresholds
    suspects: tuple[Mark, ...] = ()  # consecutive implausible readings that agree with each other

    @property
    def session_open(self) -> bool:
        return self.phase in OPEN_PHASES


@dataclass(frozen=True, slots=True)
class SessionStarted:
    meter_start_wh: int
    started_at: datetime  # the first reading over the start threshold
    at: datetime


@dataclass(frozen=True, slots=True)
class SessionResumed:
    meter_start_wh: int
    at: datetime


@dataclass(frozen=True, slots=True)
class SessionStopped:
    meter_start_wh: int
    meter_stop_wh: int
    reason: StopReason
    at: datetime


@dataclass(frozen=True, slots=True)
class ReadingRejected:
    rejection: Rejection
    at: datetime


@dataclass(frozen=True, slots=True)
class MeterReset:
    previous_wh: int
    new_wh: int
    at: datetime


DetectorEvent = SessionStarted | SessionResumed | SessionStopped | ReadingRejected | MeterReset


@dataclass(frozen=True, slots=True)
class Step:
    state: DetectorState
    events: tuple[DetectorEvent, ...] = field(default=())


def level(reading: Reading, thresholds: Thresholds) -> Level:
    """Classify a reading: by the highest phase current (and power, for stopping), or by power alone."""
    power = reading.power_w
    highest = reading.max_current_a
    if highest is not None:
        if highest >= thresholds.start_current_a:
            return Level.ACTIVE
        low = highest < thresholds.stop_current_a and (power is None or power < thresholds.stop_power_w)
    else:
        if power is None:
            raise InvalidInput("a reading without currents needs power", field="power_w")
        if power >= thresholds.start_power_w:
            return Level.ACTIVE
        low = power < thresholds.stop_power_w
    return Level.LOW if low else Level.MID


def restore(
    *, meter_start_wh: int, started_at: datetime, last_charging: Mark, baseline: Mark, now: datetime
) -> DetectorState:
    """The state of a session found open after a restart; the first good reading resumes or closes it."""
    return DetectorState(
        phase=Phase.RECONCILING,
        baseline=baseline,
        last_heard=now,
        meter_start_wh=meter_start_wh,
        started_at=started_at,
        last_charging=last_charging,
    )


def tick(state: DetectorState, now: datetime, thresholds: Thresholds) -> Step:
    """Time passed without a good reading (a failed read, or just the clock): only an outage can act."""
    events: list[DetectorEvent] = []
    return Step(_check_outage(state, now, thresholds, events), tuple(events))


def on_reading(state: DetectorState, reading: Reading, now: datetime, thresholds: Thresholds) -> Step:
    """Feed one decoded poll taken at `now`."""
    events: list[DetectorEvent] = []
    state = _check_outage(state, now, thresholds, events)
    rejection = _sanity(reading, thresholds)
    if rejection is not None or reading.energy_wh is None:
        events.append(ReadingRejected(rejection or Rejection.SENTINEL, now))
        return Step(state, tuple(events))
    mark = Mark(reading.energy_wh, now)
    rejection = _implausible(state.baseline, mark, thresholds)
    if (
        rejection is Rejection.ENERGY_FELL
        and state.baseline is not None
        and state.baseline.energy_wh - mark.energy_wh <= thresholds.energy_resolution_wh
    ):
        # A counter that wobbles within its own resolution has not fallen; keep the higher value.
        mark, rejection = Mark(state.baseline.energy_wh, now), None
    if rejection is not None:
        events.append(ReadingRejected(rejection, now))
        suspects = _extend_suspects(state.suspects, mark, thresholds)
        if len(suspects) < thresholds.reset_confirmations:
            return Step(replace(state, suspects=suspects), tuple(events))
        state = _meter_reset(state, mark, events)
    changes = _advance(state, level(reading, thresholds), mark, thresholds, events)
    changes.update(baseline=mark, last_heard=now, suspects=())
    return Step(_evolve(state, changes), tuple(events))


def _sanity(reading: Reading, thresholds: Thresholds) -> Rejection | None:
    if reading.sentinels or reading.energy_wh is None:
        return Rejection.SENTINEL
    if reading.energy_wh < 0:
        return Rejection.ENERGY_FELL
    if reading.power_w is not None and abs(reading.power_w) > 2 * thresholds.max_power_w:
        return Rejection.POWER_IMPLAUSIBLE
    return None


def _implausible(previous: Mark | None, mark: Mark, thresholds: Thresholds) -> Rejection | None:
    if previous is None:
        return None
    if mark.energy_wh == 0 and previous.energy_wh > 0:
        return Rejection.ZERO_AFTER_NONZERO
    if mark.energy_wh < previous.energy_wh:
        return Rejection.ENERGY_FELL
    hours = max((mark.at - previous.at).total_seconds(), 0.0) / 3600
    allowed = 2 * thresholds.max_power_w * hours + thresholds.energy_resolution_wh
    if mark.energy_wh - previous.energy_wh > allowed:
        return Rejection.ENERGY_JUMP
    return None


def _extend_suspects(suspects: tuple[Mark, ...], mark: Mark, thresholds: Thresholds) -> tuple[Mark, ...]:
    # Suspects confirm each other only while they form a plausible counter of their own.
    if suspects and _implausible(suspects[-1], mark, thresholds) is None:
        return (*suspects, mark)
    return (mark,)


def _meter_reset(state: DetectorState, mark: Mark, events: list[DetectorEvent]) -> DetectorState:
    previous = state.baseline.energy_wh if state.baseline is not None else 0
    if state.session_open:
        state = _close(state, StopReason.OTHER, _last_good_stop(state), mark.at, events)
    events.append(MeterReset(previous, mark.energy_wh, mark.at))
    return replace(state, phase=Phase.IDLE, first_active=None)


def _check_outage(
    state: DetectorState, now: datetime, thresholds: Thresholds, events: list[DetectorEvent]
) -> DetectorState:
    if state.last_heard is None or (now - state.last_heard).total_seconds() < thresholds.outage_close_s:
        return state
    if state.session_open:
        return _close(state, StopReason.POWER_LOSS, _last_good_stop(state), now, events)
    if state.phase is Phase.ARMING:
        return replace(state, phase=Phase.IDLE, first_active=None)
    return state


def _advance(
    state: DetectorState, load: Level, mark: Mark, thresholds: Thresholds, events: list[DetectorEvent]
) -> dict[str, Any]:
    """The changes a good reading makes to `state` (applied by the caller together with the new baseline)."""
    source = state.phase
    target = TRANSITIONS[source][load]
    if source is Phase.STOPPING and target is Phase.STOPPING:
        assert state.low_since is not None
        if (mark.at - state.low_since).total_seconds() >= thresholds.stop_grace_s:
            return _close_changes(state, StopReason.OTHER, _last_good_stop(state), mark.at, events)
        return {}
    if target is Phase.ARMING:
        return {"phase": target, "first_active": mark}
    if source is Phase.ARMING and target is Phase.CHARGING:
        assert state.first_active is not None
        start = state.first_active
        events.append(SessionStarted(start.energy_wh, start.at, mark.at))
        return {
            "phase": target,
            "first_active": None,
            "meter_start_wh": start.energy_wh,
            "started_at": start.at,
            "last_charging": mark,
        }
    if source is Phase.RECONCILING and target is Phase.IDLE:
        return _close_changes(state, StopReason.REBOOT, mark.energy_wh, mark.at, events)
    if source is Phase.RECONCILING:
        assert state.meter_start_wh is not None
        events.append(SessionResumed(state.meter_start_wh, mark.at))
    if target is Phase.CHARGING:
        return {"phase": target, "last_charging": mark, "low_since": None}
    if target is Phase.STOPPING:
        return {"phase": target, "low_since": mark.at}
    return {"phase": target, "first_active": None}


def _last_good_stop(state: DetectorState) -> int:
    assert state.last_charging is not None
    return state.last_charging.energy_wh


def _close(
    state: DetectorState, reason: StopReason, meter_stop_wh: int, at: datetime, events: list[DetectorEvent]
) -> DetectorState:
    return _evolve(state, _close_changes(state, reason, meter_stop_wh, at, events))


def _close_changes(
    state: DetectorState, reason: StopReason, meter_stop_wh: int, at: datetime, events: list[DetectorEvent]
) -> dict[str, Any]:
    assert state.meter_start_wh is not None
    # Rule 1: a session never goes negative, whatever the counter did.
    events.append(SessionStopped(state.meter_start_wh, max(meter_stop_wh, state.meter_start_wh), reason, at))
    return {
        "phase": Phase.IDLE,
        "first_active": None,
        "meter_start_wh": None,
        "started_at": None,
        "last_charging": None,
        "low_since": None,
    }


def _evolve(state: DetectorState, changes: dict[str, Any]) -> DetectorState:
    # dataclasses.replace introspects the fields on every call; a poll runs this once per meter, so spell it out.
    get = changes.get
    return DetectorState(
        phase=get("phase", state.phase),
        baseline=get("baseline", state.baseline),
        last_heard=get("last_heard", state.last_heard),
        first_active=get("first_active", state.first_active),
        meter_start_wh=get("meter_start_wh", state.meter_start_wh),
        started_at=get("started_at", state.started_at),
        last_charging=get("last_charging", state.last_charging),
        low_since=get("low_since", state.low_since),
        suspects=get("suspects", state.suspects),
    )
