"""The site power allocator: one round shares what each circuit can give among the sessions below it.

A round is a pure function of the site's state and the time (decisions.md "Site power"; docs/power.md):

- What a circuit can give, per phase: its limit, less its margin, less the other load its meter measures. A circuit
  whose meter is silent falls back to its limit less `Settings.silent_meter_load_a` (0: the whole limit, without
  measured headroom) and the round says so. Every circuit on the path from a station to the root constrains it.
- A station that is offline keeps its last allowance for `offline_hold`, then its safe default; both are taken off
  the circuits first, since nothing can be sent to it. A station that refused profiles (or does not support them)
  is counted at its sessions' maximum current, first too.
- Admission: every session charging gets at least the 6 A minimum on each of its phases or is paused. Sessions are
  admitted in turn while the minimum fits on every circuit and phase they use: higher priority first; within one
  priority the sessions charging by start (so the latest started is paused first), then the waiting ones by how long
  they have waited (the longest paused resumes first; a new session waits from now).
- Sharing: above the admitted sessions' minimums, higher priorities are served first, up to their demand; each
  priority shares what is left max-min fair (water-filling) over its sessions' demands.
- Demand: a session's maximum current, or, when its vehicle has drawn clearly less than its allowance for a while,
  what it draws plus `unused_slack_a`: headroom a vehicle does not use goes to the others. A vehicle that draws
  within `draw_tolerance_a` of its allowance is taken to want more, up to its maximum.
- Lending: a session whose demand is under the minimum is sent the minimum but holds only its demand; the rest goes
  to the others, at most the margin of each circuit on its path whose meter is live (the meter sees a lending
  vehicle rise, and its reading pokes a round).
- Smoothing: a decrease is sent at once; an increase only when at least `increase_step_a` and when the station was
  sent nothing for `increase_every`; meanwhile the session keeps its last allowance, which is less.

Allowances are in tenths of an ampere, rounded down, so that a sum never exceeds what it was shared from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from chargenet.domain.circuits import MINIMUM_SESSION_A, PHASES, Phase, path_to_root

_PHASE_INDEX = {phase: index for index, phase in enumerate(PHASES)}
_EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class Settings:
    minimum_a: float = MINIMUM_SESSION_A
    increase_every: timedelta = timedelta(seconds=30)
    increase_step_a: float = 1.0
    offline_hold: timedelta = timedelta(minutes=5)
    # A vehicle drawing within `draw_tolerance_a` of its allowance is taken to want more; one drawing less is offered
    # its draw plus `unused_slack_a` (more than the tolerance, so that it stays offered that while it draws so).
    unused_slack_a: float = 2.0
    draw_tolerance_a: float = 1.0
    # How long after an allowance was sent a vehicle's draw is trusted to show what it wants.
    draw_settle: timedelta = timedelta(seconds=10)
    # The other load a circuit's silent meter is assumed to see; 0 shares the whole limit.
    silent_meter_load_a: float = 0.0
    # A grid meter without an answer this long is silent (`domain.grid_meters`).
    meter_silent_after: timedelta = timedelta(seconds=5)
    # Paused sessions take turns: one that has waited this long comes before one that has charged this long.
    turn: timedelta = timedelta(minutes=15)


@dataclass(frozen=True, slots=True)
class Circuit:
    id: str
    parent_id: str | None
    limit_a: float
    margin_a: float = 0.0
    phases: tuple[Phase, ...] = PHASES
    metered: bool = False
    # What the meter measures beside the sessions below the circuit, per phase; None while the meter is silent.
    other_load_a: Mapping[Phase, float] | None = None


@dataclass(frozen=True, slots=True)
class Station:
    id: str
    circuit_id: str
    phases: tuple[Phase, ...]
    connectors: int = 1
    priority: int = 0
    offline_since: datetime | None = None
    # It refused or does not support charging profiles: its sessions are counted at their maximum, never sent.
    unlimited: bool = False


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    station_id: str
    connector_id: int
    started_at: datetime
    max_current_a: float  # per phase: the lower of the vehicle's and the connector's
    phases: tuple[Phase, ...] | None = None  # None: the station's (a single-phase vehicle on a three-phase one: L1)
    draw_a: float | None = None  # measured, per phase (the largest of its phases)
    allowance_a: float | None = None  # the last one sent; None before the first
    sent_at: datetime | None = None
    paused_since: datetime | None = None
    charging_since: datetime | None = None  # as the last round said; None: since it started


class PauseReason(StrEnum):
    NO_ROOM = "no-room"  # the minimum does not fit on a circuit it uses, after sessions ranked before it
    SAFE_DEFAULT = "safe-default"  # its station is offline past the hold and its safe default is 0 A
    WAITING_TO_RESUME = "waiting-to-resume"  # it fits again, but its station was sent a limit too recently


@dataclass(slots=True)  # not frozen: a round makes one per session, and a frozen one costs three times as much
class Allowance:
    session_id: str
    station_id: str
    connector_id: int
    phases: tuple[Phase, ...]
    amps: float  # per phase, on each of `phases`; 0 when paused
    target_a: float  # what this round shares to it before smoothing
    paused: PauseReason | None
    paused_since: datetime | None
    send: bool  # the station must be sent this allowance now
    sent_at: datetime | None
    charging_since: datetime | None  # since when it has been given current without a pause; None while paused


@dataclass(frozen=True, slots=True)
class CircuitLoad:
    circuit_id: str
    available_a: dict[Phase, float]  # what the sessions below may share: limit less margin and other load
    allocated_a: dict[Phase, float]  # what the allowances below add up to
    meter_silent: bool


@dataclass(frozen=True, slots=True)
class Round:
    at: datetime
    allowances: tuple[Allowance, ...]
    circuits: tuple[CircuitLoad, ...]
    stations_to_send: frozenset[str] = field(default=frozenset())


class _Tree:
    """The circuits as integer resources: circuit k's phase p is resource 3k + p."""

    def __init__(self, circuits: Sequence[Circuit]) -> None:
        self.circuits = list(circuits)
        self.index = {circuit.id: k for k, circuit in enumerate(self.circuits)}
        parents = {circuit.id: circuit.parent_id for circuit in self.circuits}
        for circuit in self.circuits:
            if circuit.parent_id is not None and circuit.parent_id not in self.index:
                raise ValueError(f"circuit {circuit.id!r} hangs on unknown circuit {circuit.parent_id!r}")
        self.paths = {cid: [self.index[c] for c in path_to_root(cid, parents)] for cid in self.index}
        self._resources: dict[tuple[str, tuple[Phase, ...]], list[int]] = {}

    def resources(self, circuit_id: str, phases: tuple[Phase, ...]) -> list[int]:
        """The resources a session on `phases` of a station on `circuit_id` uses (shared: not to be changed)."""
        key = (circuit_id, phases)
        found = self._resources.get(key)
        if found is None:
            found = [3 * k + _PHASE_INDEX[phase] for k in self.paths[circuit_id] for phase in phases]
            self._resources[key] = found
        return found

    def lendable(self) -> list[float]:
        """Per resource, what may be lent beyond the shares: a circuit's margin, while a live meter measures it (only
        a meter sees a vehicle rise back to its allowance, and the round it pokes takes it back from the others)."""
        budget = [0.0] * (3 * len(self.circuits))
        for k, circuit in enumerate(self.circuits):
            if circuit.metered and circuit.other_load_a is not None:
                for phase in circuit.phases:
                    budget[3 * k + _PHASE_INDEX[phase]] = circuit.margin_a
        return budget

    def capacities(self, settings: Settings, *, measured: bool) -> list[float]:
        capacity = [0.0] * (3 * len(self.circuits))
        for k, circuit in enumerate(self.circuits):
            for phase in circuit.phases:
                other = 0.0
                if measured and circuit.metered:
                    load = circuit.other_load_a
                    other = settings.silent_meter_load_a if load is None else max(0.0, load.get(phase, 0.0))
                capacity[3 * k + _PHASE_INDEX[phase]] = circuit.limit_a - circuit.margin_a - other
        return capacity


def safe_defaults(
    circuits: Sequence[Circuit], stations: Sequence[Station], settings: Settings = Settings()
) -> dict[tuple[str, int], float]:
    """Each connector's safe default: the minimum to as many connectors as fit under every circuit's limit (less
    its margin), in the order of station id and connector, 0 A to the rest."""
    tree = _Tree(circuits)
    room = tree.capacities(settings, measured=False)
    defaults: dict[tuple[str, int], float] = {}
    for station in sorted(stations, key=lambda s: s.id):
        uses = tree.resources(station.circuit_id, station.phases)
        for connector in range(1, station.connectors + 1):
            fits = all(room[r] >= settings.minimum_a - _EPSILON for r in uses)
            if fits:
                for r in uses:
                    room[r] -= settings.minimum_a
            defaults[(station.id, connector)] = settings.minimum_a if fits else 0.0
    return defaults


def allocate(
    circuits: Sequence[Circuit],
    stations: Sequence[Station],
    sessions: Sequence[Session],
    now: datetime,
    settings: Settings = Settings(),
) -> Round:
    tree = _Tree(circuits)
    by_id = {station.id: station for station in stations}
    capacity = tree.capacities(settings, measured=True)
    capacity_before = list(capacity)
    defaults: dict[tuple[str, int], float] | None = None

    results: dict[str, Allowance] = {}
    online: list[tuple[Session, Station, tuple[Phase, ...], list[int]]] = []
    for session in sessions:
        station = by_id[session.station_id]
        phases = session.phases or station.phases
        uses = tree.resources(station.circuit_id, phases)
        if station.offline_since is None and not station.unlimited:
            online.append((session, station, phases, uses))
            continue
        # Nothing reaches an offline station, nor limits one that takes no profiles: what it holds is taken off first.
        if station.unlimited:
            amps = session.max_current_a
            reason = None
        elif station.offline_since is not None and now - station.offline_since < settings.offline_hold:
            amps = session.allowance_a or 0.0
            reason = None if amps else PauseReason.NO_ROOM
        else:
            if defaults is None:
                defaults = safe_defaults(circuits, stations, settings)
            amps = defaults.get((station.id, session.connector_id), 0.0)
            reason = None if amps else PauseReason.SAFE_DEFAULT
        for r in uses:
            capacity[r] -= amps
        results[session.id] = Allowance(
            session.id,
            station.id,
            session.connector_id,
            phases,
            amps,
            amps,
            reason,
            (session.paused_since or now) if reason else None,
            False,
            session.sent_at,
            None if reason else session.charging_since,
        )

    last_sent: dict[str, datetime] = {}
    for session, _, _, _ in online:
        sent_at = session.sent_at
        if sent_at is not None:
            before = last_sent.get(session.station_id)
            if before is None or sent_at > before:
                last_sent[session.station_id] = sent_at
    targets = _share(online, capacity, tree.lendable(), now, settings)
    smoothed: dict[str, tuple[float, bool]] = {}
    held = []
    for entry in online:
        session = entry[0]
        target = targets[session.id]
        smoothed[session.id] = outcome = _smoothed(session, target, last_sent.get(session.station_id), now, settings)
        if outcome[0] < target:
            held.append(entry)
    if held:
        # What a held increase leaves unused goes to the others in a second pass, the held ones fixed where they are.
        for session, _, _, uses in held:
            for r in uses:
                capacity[r] -= smoothed[session.id][0]
        rest = [entry for entry in online if smoothed[entry[0].id][0] >= targets[entry[0].id]]
        targets.update(_share(rest, capacity, tree.lendable(), now, settings))
        for session, station, _, _ in rest:
            smoothed[session.id] = _smoothed(session, targets[session.id], last_sent.get(station.id), now, settings)
    for session, station, phases, _ in online:
        target = targets[session.id]
        amps, send = smoothed[session.id]
        if amps:
            reason = None
        elif target:
            reason = PauseReason.WAITING_TO_RESUME
        else:
            reason = PauseReason.NO_ROOM
        charging_since = None
        if amps:
            charging_since = session.charging_since if session.allowance_a else now
        results[session.id] = Allowance(
            session.id,
            station.id,
            session.connector_id,
            phases,
            amps,
            target,
            reason,
            (session.paused_since or now) if reason else None,
            send,
            now if send else session.sent_at,
            charging_since,
        )

    allowances = tuple(results[session.id] for session in sessions)
    return Round(
        at=now,
        allowances=allowances,
        circuits=_loads(tree, allowances, by_id, capacity_before),
        stations_to_send=frozenset(a.station_id for a in allowances if a.send),
    )


def _demand(session: Session, now: datetime, settings: Settings) -> float:
    """What the session asks for: its maximum, or what its vehicle draws and the slack when it draws clearly less
    than its allowance (below the minimum too: see lending in `_share`)."""
    most = max(session.max_current_a, settings.minimum_a)
    given = session.allowance_a
    if (
        session.draw_a is not None
        and given
        and session.sent_at is not None
        and now - session.sent_at >= settings.draw_settle
        and session.draw_a < given - settings.draw_tolerance_a
    ):
        return min(most, session.draw_a + settings.unused_slack_a)
    return most


def _share(
    online: list[tuple[Session, Station, tuple[Phase, ...], list[int]]],
    capacity: list[float],
    lendable: list[float],
    now: datetime,
    settings: Settings,
) -> dict[str, float]:
    minimum = settings.minimum_a

    turn_began = now - settings.turn
    # The admission order: (-priority, class, since, ...): charging less than a turn (by start), waiting a turn or
    # more (by how long), charging a turn or more (by start), waiting less than a turn (by how long).
    ranks: list[tuple[object, ...]] = [
        (
            -station.priority,
            0 if (session.charging_since or session.started_at) > turn_began else 2,
            session.started_at,
            session.id,
        )
        if session.allowance_a and session.paused_since is None
        else (
            -station.priority,
            1 if (session.paused_since or now) <= turn_began else 3,
            session.paused_since or now,
            session.started_at,
            session.id,
        )
        for session, station, _, _ in online
    ]
    room = list(capacity)
    budget = list(lendable)
    # Only a live meter lends (below): without one, every session holds the minimum and its demand is asked later.
    demands = [_demand(entry[0], now, settings) for entry in online] if any(budget) else None
    admitted: list[tuple[Session, Station, tuple[Phase, ...], list[int]]] = []
    lent_by: dict[str, float] = {}  # session id -> what it lends of its minimum
    targets: dict[str, float] = {}
    floor = minimum - _EPSILON
    for index in sorted(range(len(online)), key=ranks.__getitem__):
        entry = online[index]
        uses = entry[3]
        lent = 0.0
        if demands is not None and demands[index] < floor:
            # A vehicle that draws clearly less than the minimum keeps the minimum on the wire, but holds only what
            # it asks for (its draw and the slack); the rest is lent to the others, within what its circuits may lend.
            lent = max(0.0, min(minimum - demands[index], *(budget[r] for r in uses)))
        for r in uses:
            if room[r] < floor - lent:
                targets[entry[0].id] = 0.0
                break
        else:
            if lent:
                lent_by[entry[0].id] = lent
                for r in uses:
                    budget[r] -= lent
                    room[r] -= minimum - lent
            else:
                for r in uses:
                    room[r] -= minimum
            admitted.append(entry)

    # The admitted sessions' floors (the minimum less what they lend) are held for every priority below the one
    # being served.
    held = [0.0] * len(capacity)
    for entry in admitted:
        holds = minimum - lent_by.get(entry[0].id, 0.0) if lent_by else minimum
        for r in entry[3]:
            held[r] += holds
    left = list(capacity)
    demand_of = {entry[0].id: demands[index] for index, entry in enumerate(online)} if demands is not None else None
    priorities = sorted({entry[1].priority for entry in admitted}, reverse=True)
    for priority in priorities:
        group = [entry for entry in admitted if entry[1].priority == priority]
        for entry in group:
            holds = minimum - lent_by.get(entry[0].id, 0.0) if lent_by else minimum
            for r in entry[3]:
                held[r] -= holds
        if demand_of is None:
            wants = [max(minimum, _demand(entry[0], now, settings)) for entry in group]
        else:
            wants = [max(demand_of[entry[0].id], minimum - lent_by.get(entry[0].id, 0.0)) for entry in group]
        shares = water_fill(
            wants,
            [entry[3] for entry in group],
            [left[r] - held[r] for r in range(len(left))],
        )
        for entry, share in zip(group, shares, strict=True):
            amps = max(minimum, math.floor(share * 10 + 1e-6) / 10)
            targets[entry[0].id] = amps
            # A lending session holds its floor (its demand, which its share reached), under the minimum it is sent.
            holds = minimum - lent_by[entry[0].id] if entry[0].id in lent_by else amps
            for r in entry[3]:
                left[r] -= holds
    return targets


def water_fill(demands: Sequence[float], uses: Sequence[Sequence[int]], capacity: Sequence[float]) -> list[float]:
    """Max-min fair shares of `capacity` (per resource) among users of the resources in `uses`, each up to its demand.

    All unfrozen users rise together; a user stops at its demand, and every user of a resource stops when that
    resource is full. Users that reach their demand first only raise the level the others may reach, so all of
    them stop at once before the fullest resource is looked for again.
    """
    count = len(demands)
    shares = [0.0] * count
    active = [True] * count
    users: dict[int, list[int]] = {}
    active_users: dict[int, int] = {}
    frozen: dict[int, float] = {}
    for i, resources in enumerate(uses):
        for r in resources:
            users.setdefault(r, []).append(i)
            active_users[r] = active_users.get(r, 0) + 1
            frozen.setdefault(r, 0.0)
    order = sorted(range(count), key=demands.__getitem__)
    next_in_order = 0
    remaining = count

    def stop(i: int, share: float) -> None:
        active[i] = False
        shares[i] = share
        for r in uses[i]:
            active_users[r] -= 1
            frozen[r] += share
            if not active_users[r]:
                del active_users[r]

    while remaining:
        level = math.inf
        fullest = -1
        for r, n in active_users.items():
            reach = (capacity[r] - frozen[r]) / n
            if reach < level:
                level, fullest = reach, r
        level = max(level, 0.0)
        stopped = 0
        while next_in_order < count:
            i = order[next_in_order]
            if active[i]:
                if demands[i] > level:
                    break
                stop(i, demands[i])
                stopped += 1
            next_in_order += 1
        if not stopped:
            # `fullest` is -1 only for users of no resource, whose demands all stopped above.
            for i in users[fullest]:
                if active[i]:
                    stop(i, level)
                    stopped += 1
        remaining -= stopped
    return shares


def _loads(
    tree: _Tree,
    allowances: Iterable[Allowance],
    stations: Mapping[str, Station],
    available: list[float],
) -> tuple[CircuitLoad, ...]:
    allocated = [0.0] * (3 * len(tree.circuits))
    for allowance in allowances:
        amps = allowance.amps
        if amps:
            for r in tree.resources(stations[allowance.station_id].circuit_id, allowance.phases):
                allocated[r] += amps
    return tuple(
        CircuitLoad(
            circuit.id,
            {phase: round(available[3 * k + _PHASE_INDEX[phase]], 1) for phase in circuit.phases},
            {phase: round(allocated[3 * k + _PHASE_INDEX[phase]], 1) for phase in circuit.phases},
            circuit.metered and circuit.other_load_a is None,
        )
        for k, circuit in enumerate(tree.circuits)
    )


def _smoothed(
    session: Session, target: float, station_sent_at: datetime | None, now: datetime, settings: Settings
) -> tuple[float, bool]:
    """The allowance the session holds after this round, and whether its station must be sent it now."""
    last = session.allowance_a
    if last is None:
        return target, True
    if target < last:
        return target, True
    if target - last < settings.increase_step_a - _EPSILON:
        return last, False
    if station_sent_at is not None and now - station_sent_at < settings.increase_every:
        return last, False
    return target, True
