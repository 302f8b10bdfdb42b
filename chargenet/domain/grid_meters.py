"""What a circuit's grid meter tells the allocator: the other load on the circuit, or why it tells nothing (pure).

A grid meter measures everything its circuit carries: the stations below it and whatever else the building draws.
The other load, per phase, is its reading less what the sessions below the circuit are known to draw (their
stations' last meter values, `known_draw`); never below zero, since a meter that reads less than the stations draw
is behind them, not lending current.

A meter that has not answered for `silent_after`, or whose reading is nonsense (a current that is not a number, is
negative, or is above `max_reading_a`, a bound no grid connection reaches), tells nothing: the allocator falls back
to the circuit's limit without measured headroom (decisions.md "Site power") and says why (`MeterFault`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from chargenet.domain.circuits import PHASES, Phase

SILENT_AFTER = timedelta(seconds=5)
"""A grid meter polled every second that has not answered for this long is silent (five polls missed)."""
MAX_READING_A = 4000.0
"""Above this a phase current is nonsense: more than the largest low-voltage grid connections carry."""


class MeterFault(StrEnum):
    SILENT = "silent"  # no reading for `silent_after`
    NOT_A_NUMBER = "not-a-number"
    NEGATIVE = "negative"
    ABOVE_BOUND = "above-bound"
    NO_CURRENTS = "no-currents"  # the meter's profile reads no phase currents, or it answered "no value"


@dataclass(frozen=True, slots=True)
class GridReading:
    """A grid meter's last answer: its phase currents as read, or the fault that made them nonsense."""

    read_at: datetime
    currents_a: Mapping[Phase, float]
    fault: MeterFault | None = None


@dataclass(frozen=True, slots=True)
class MeterStatus:
    measured_a: Mapping[Phase, float] | None  # None while the meter tells nothing
    fault: MeterFault | None


def judge(currents_a: Sequence[float] | None, max_reading_a: float = MAX_READING_A) -> MeterFault | None:
    """Whether a poll's phase currents are nonsense, and why; None when they can be trusted."""
    if not currents_a:
        return MeterFault.NO_CURRENTS
    if any(math.isnan(amps) or math.isinf(amps) for amps in currents_a):
        return MeterFault.NOT_A_NUMBER
    if any(amps < 0 for amps in currents_a):
        return MeterFault.NEGATIVE
    if any(amps > max_reading_a for amps in currents_a):
        return MeterFault.ABOVE_BOUND
    return None


def by_phase(currents_a: Sequence[float]) -> dict[Phase, float]:
    """A single-phase meter's one current is L1's."""
    return dict(zip(PHASES, currents_a, strict=False))


def status(reading: GridReading | None, now: datetime, silent_after: timedelta = SILENT_AFTER) -> MeterStatus:
    """What the meter tells now: its measurement, or the fault that makes the allocator fall back."""
    if reading is None or now - reading.read_at > silent_after:
        return MeterStatus(None, MeterFault.SILENT)
    if reading.fault is not None:
        return MeterStatus(None, reading.fault)
    return MeterStatus(dict(reading.currents_a), None)


@dataclass(frozen=True, slots=True)
class Draw:
    """What one session below a circuit draws, per phase, on the phases it uses."""

    phases: tuple[Phase, ...]
    amps: float


def stations_total(draws: Iterable[Draw]) -> dict[Phase, float]:
    """What the sessions below a circuit draw together, per phase."""
    total = dict.fromkeys(PHASES, 0.0)
    for draw in draws:
        for phase in draw.phases:
            total[phase] += draw.amps
    return total


def other_load(measured_a: Mapping[Phase, float], draws: Iterable[Draw]) -> dict[Phase, float]:
    """The load beside the sessions, per phase: the measurement less what they draw, at least zero."""
    total = stations_total(draws)
    return {phase: round(max(0.0, amps - total[phase]), 1) for phase, amps in measured_a.items()}


def draw_estimate(
    reported_a: float | None,
    reported_at: datetime | None,
    held_a: float | None,
    held_since: datetime | None,
) -> float | None:
    """What a session draws now, per phase, as far as can be told: what its station last reported, at most the
    allowance it holds (the report may predate a decrease); the allowance itself when nothing was reported since it
    was sent (the vehicle is taken to follow it, as a sound one does within seconds); None when neither is known."""
    if held_a is None:
        return reported_a
    if reported_a is None or reported_at is None or (held_since is not None and reported_at < held_since):
        return held_a
    return min(reported_a, held_a)


def known_draw(reported_a: float | None, held_a: float | None) -> float:
    """What a session is known to draw, per phase, to take off its circuit's reading: what its station last
    reported, at most the allowance it holds; nothing before its first report. Never more than it may draw: a
    vehicle that draws less than its allowance (a smaller one, or one nearly full) would otherwise hide as much of
    the other load, which would then be shared out beyond the limit. Less after an increase, until its next report:
    the others are left less meanwhile, not more."""
    if reported_a is None:
        return 0.0
    return reported_a if held_a is None else min(reported_a, held_a)


def draw_amps(power_w: float | None, phases: int, volts: float) -> float | None:
    """A session's current per phase from the power its station last reported, spread evenly over its phases."""
    if power_w is None or phases < 1 or math.isnan(power_w):
        return None
    return round(max(0.0, power_w) / (volts * phases), 1)
