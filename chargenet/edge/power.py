"""The site power controller at the edge: runs the allocator's rounds and sends their decisions as charging profiles.

Per site with circuits, a round (`domain.power.allocate`) runs every `ROUND_INTERVAL_S` and at once when poked (a
session's start or end, a station's connection). One short unit reads the site's state and writes the round's
allowances, so that a restart resumes from them (`power_allowances`); the profiles are sent after it commits and
the stations' answers are written in another unit. The rules of what is sent are `domain.charging_profiles`:

- every connected station that takes profiles gets its safe defaults as TxDefaultProfiles when they change (and
  after each reconnection), and each session the round says to send gets its allowance as a TxProfile;
- a station that answers Rejected, or does not support SetChargingProfile (NotSupported, NotImplemented), is kept as
  such and counted at its sessions' full rating until it accepts one again (it is asked again when it reconnects);
- on a station behind an upstream, each profile is the lower of the edge's and the upstream's profile of that
  purpose (the upstream's SetChargingProfile and ClearChargingProfile are intercepted by the station's link, which
  keeps them with `keep_upstream_profile` and `drop_upstream_profiles`).

On PostgreSQL several processes share a store: one runs a site's rounds, the holder of its lease (`power_leases`,
the rules of `meters.lease`: held 10 s, renewed each round). SQLite is one process: it holds every site.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Protocol

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.domain import charging_profiles as profiles
from chargenet.domain import power
from chargenet.domain.circuits import PHASES, Phase, parse_phases
from chargenet.domain.generations import OCPP16, OCPP201
from chargenet.domain.grid_meters import MeterFault
from chargenet.edge.ocpp16.frames import Payload, dump_payload, load_payload
from chargenet.errors import ChargenetError, StationAnswerFailed
from chargenet.ids import process_owner
from chargenet.meters.grid import CircuitGrid, SessionDraw, circuit_grids, session_draws
from chargenet.meters.lease import BusLease, LeaseDecision, decide, expires_at
from chargenet.store.allowances import UNLIMITED_ANSWERS, allocator_session, open_transactions
from chargenet.store.db import Store
from chargenet.store.models import (
    Circuit,
    EdgeTransaction,
    PowerAllowance,
    PowerLease,
    SitePowerSample,
    Station,
    StationCircuit,
    StationPresence,
    StationProfileAnswer,
    UpstreamChargingProfile,
)
from chargenet.store.notify import SITE_POWER
from chargenet.workers import LoopWorker

log = logging.getLogger(__name__)

ROUND_INTERVAL_S = 5.0
SAMPLE_EVERY = timedelta(minutes=1)
"""How often a circuit's figures are kept for the site power chart."""
SAMPLES_KEPT = timedelta(hours=24)
"""What a session is taken to ask for per phase while neither its vehicle nor its station has said."""
ACCEPTED = "Accepted"
_NOT_SUPPORTED = frozenset({"NotSupported", "NotImplemented"})

_SETTINGS = power.Settings()

# A station that was never connected: as if offline since long ago, so it counts at its safe default.
_NEVER = datetime(2000, 1, 1, tzinfo=UTC)


class StationSender(Protocol):
    """What the controller needs of the edge: whether a station is connected here and in which generation, and a
    command to it wherever it is connected (`hub.Edge`)."""

    store: Store
    clock: Clock

    def generation_here(self, station_id: str) -> str | None: ...

    async def command(self, station_id: str, action: str, payload: Payload) -> Payload: ...


@dataclass(frozen=True, slots=True)
class _SiteState:
    circuits: list[power.Circuit]
    circuit_limits: dict[str, float]
    stations: list[power.Station]
    sessions: list[power.Session]
    generations: dict[str, str]  # station id -> subprotocol of its connection, for the online ones
    defaults_sent: dict[str, str | None]  # station id -> the safe defaults it last accepted
    station_transactions: dict[int, str | None]  # edge transaction id -> the 2.0.1 station's own id
    accepted_amps: dict[int, float | None]  # edge transaction id -> the allowance its station last accepted
    grids: dict[str, CircuitGrid]  # circuit id -> what its meter tells, what is drawn below it


@dataclass(frozen=True, slots=True)
class _Send:
    station_id: str
    generation: str
    limit: profiles.Limit
    transaction_id: int | None = None  # the edge's, for a TxProfile


@dataclass
class SiteFigures:
    """What the last round of a site this process runs decided, for `/metrics`."""

    limits: dict[str, float] = field(default_factory=dict)  # circuit id -> limit per phase
    allocated: dict[tuple[str, str], float] = field(default_factory=dict)  # (circuit id, phase) -> amperes
    paused: dict[str, int] = field(default_factory=dict)  # circuit id -> sessions paused on stations hung on it
    measured: dict[tuple[str, str], float] = field(default_factory=dict)  # (circuit id, phase) -> its meter's
    falling_back: dict[str, str] = field(default_factory=dict)  # circuit id -> why its meter tells nothing


class PowerController(LoopWorker):
    name = "site-power"

    def __init__(
        self,
        edge: StationSender,
        interval: float = ROUND_INTERVAL_S,
        settings: power.Settings = _SETTINGS,
        owner: str | None = None,
    ) -> None:
        super().__init__(edge.clock, interval)
        self.edge = edge
        self.store = edge.store
        self.settings = settings
        self.owner = owner or process_owner()
        self.figures: dict[str, SiteFigures] = {}
        self._wake = asyncio.Event()
        self._reconnected: set[str] = set()
        self._poked: set[str] = set()
        self._timed = True  # the next round is the timed one, of every site
        self._fallbacks: dict[str, str | None] = {}  # circuit id -> why its meter told nothing at the last round
        self._started = self.clock.now()
        self._sampled: dict[str, datetime] = {}  # site id -> when its circuits' figures were last kept
        # On PostgreSQL, per site this process holds: set when another process changed what the site may draw.
        self._notified: dict[str, asyncio.Event] = {}

    def poke(self, site_id: str, reconnected: str | None = None) -> None:
        """Something changed on a site (a session started or ended, a station connected, a limit changed, its grid
        meter answered): run its round at once. A station that `reconnected` is asked again: its profiles may be
        gone, and its refusal may be past."""
        if reconnected is not None:
            self._reconnected.add(reconnected)
        self._poked.add(site_id)
        self._wake.set()

    async def pause(self, stopping: asyncio.Event) -> None:
        sleeper = asyncio.ensure_future(self.clock.sleep(self.interval))
        stopper = asyncio.ensure_future(stopping.wait())
        wakers = [asyncio.ensure_future(event.wait()) for event in (self._wake, *self._notified.values())]
        await asyncio.wait({sleeper, stopper, *wakers}, return_when=asyncio.FIRST_COMPLETED)
        for site_id, notified in self._notified.items():
            if notified.is_set():
                notified.clear()
                self._poked.add(site_id)
                self._wake.set()
        self._timed = sleeper.done() or not self._wake.is_set()
        for task in (sleeper, stopper, *wakers):
            task.cancel()
        self._wake.clear()

    def _listen(self, held: Sequence[str]) -> None:
        """Be told of the changes other processes make to the sites this one holds (PostgreSQL)."""
        if self.store.dialect != "postgresql":
            return
        listener = self.store.listener
        for site_id in set(self._notified) - set(held):
            listener.unsubscribe(SITE_POWER, self._notified.pop(site_id))
        for site_id in held:
            if site_id not in self._notified:
                self._notified[site_id] = listener.subscribe(SITE_POWER, site_id)

    async def run_once(self) -> None:
        now = self.clock.now()
        if self._reconnected:
            reconnected, self._reconnected = self._reconnected, set()
            async with self.store.transaction() as session:
                await session.execute(
                    delete(StationProfileAnswer).where(StationProfileAnswer.station_id.in_(sorted(reconnected)))
                )
        async with self.store.read() as session:
            site_ids = sorted(set(await session.scalars(select(Circuit.site_id))))
        held = await self.hold(site_ids, now)
        self._listen(held)
        for gone in set(self.figures) - set(held):
            del self.figures[gone]
        poked, self._poked = self._poked, set()
        if not self._timed:
            # Woken by a change: the rounds of the sites it touched; the others wait for the timed round.
            held = [site_id for site_id in held if site_id in poked]
        self._timed = True
        for site_id in held:
            try:
                await self.run_site(site_id)
            except Exception:
                # One site's failure (logged) leaves the others' rounds running.
                log.exception("a site power round failed", extra={"fields": {"site": site_id}})

    async def release(self) -> None:
        """Give up this process's leases (on shutdown), so that another runs its sites at once."""
        if self.store.dialect != "postgresql":
            return
        async with self.store.transaction() as session:
            await session.execute(
                update(PowerLease).where(PowerLease.owner == self.owner).values(owner=None, expires_at=None)
            )

    async def hold(self, site_ids: list[str], now: datetime) -> list[str]:
        """The sites of `site_ids` whose rounds this process runs now: on PostgreSQL those whose lease it renewed
        or took; on SQLite, every one."""
        if self.store.dialect != "postgresql" or not site_ids:
            return site_ids
        async with self.store.transaction() as session:
            await session.execute(
                pg_insert(PowerLease)
                .values([{"site_id": site_id} for site_id in site_ids])
                .on_conflict_do_nothing(index_elements=[PowerLease.site_id])
            )
            rows = (
                await session.execute(
                    select(PowerLease.site_id, PowerLease.owner, PowerLease.expires_at)
                    .where(PowerLease.site_id.in_(site_ids))
                    .order_by(PowerLease.site_id)
                    .with_for_update(skip_locked=True)
                )
            ).all()
            held = [
                site_id
                for site_id, owner, expiry in rows
                if decide(BusLease(site_id, owner, expiry), self.owner, now) is not LeaseDecision.LEAVE
            ]
            if held:
                await session.execute(
                    update(PowerLease)
                    .where(PowerLease.site_id.in_(held))
                    .values(owner=self.owner, expires_at=expires_at(now))
                )
        return held

    async def run_site(self, site_id: str) -> power.Round:
        """One round for a site: decide and store it in one unit, send the profiles after it, store the answers."""
        now = self.clock.now()
        async with self.store.transaction() as session:
            state = await _load(session, site_id, self.edge, now, self.settings)
            result = power.allocate(state.circuits, state.stations, state.sessions, now, self.settings)
            await _store_round(session, site_id, result, now)
            sampled = self._sampled.get(site_id)
            if sampled is None or now - sampled >= SAMPLE_EVERY:
                await _store_samples(session, site_id, state, now)
                self._sampled[site_id] = now
        self.figures[site_id] = _figures(state, result)
        self._say_fallbacks(site_id, state)
        sends = _sends(state, result, self.settings)
        if not sends:
            return result
        answers: dict[str, str] = {}
        accepted: list[_Send] = []
        upstream = await _upstream_profiles(self.store, {send.station_id for send in sends})
        for send in sends:
            if answers.get(send.station_id, ACCEPTED) != ACCEPTED:
                continue  # it refused one already this round
            answer = await self._send(send, upstream)
            if answer is None:
                continue  # not connected, or silent: sent again next round
            answers[send.station_id] = answer
            if answer == ACCEPTED:
                accepted.append(send)
        async with self.store.transaction() as session:
            await _store_answers(session, state, answers, accepted, now)
        if any(answer in UNLIMITED_ANSWERS for answer in answers.values()):
            self.poke(site_id)  # a station that refused counts at its full rating from now: share again at once
        return result

    def _say_fallbacks(self, site_id: str, state: _SiteState) -> None:
        """Log once per change when a circuit falls back to its limit because its meter tells nothing, and when its
        meter is heard again."""
        for circuit_id, grid in state.grids.items():
            if grid.status is None:
                continue
            fault = grid.status.fault.value if grid.status.fault else None
            known = circuit_id in self._fallbacks
            if known and self._fallbacks[circuit_id] == fault:
                continue
            if not known and fault == MeterFault.SILENT and self._starting():
                # Not polled yet since this process started: no news, though the round falls back meanwhile.
                continue
            self._fallbacks[circuit_id] = fault
            fields = {"site": site_id, "circuit": circuit_id, "reason": fault}
            if fault is not None:
                log.warning(
                    "a circuit's grid meter tells nothing: it falls back to its limit", extra={"fields": fields}
                )
            elif known:
                log.info("a circuit's grid meter is heard again", extra={"fields": fields})

    def _starting(self) -> bool:
        """Within a silent meter's grace of this controller's start: its grid meters may not have been polled yet."""
        return self.clock.now() - self._started <= self.settings.meter_silent_after

    async def _send(self, send: _Send, upstream: dict[tuple[str, int, str], Payload]) -> str | None:
        limit = send.limit
        wording = profiles.wording(send.generation)
        kept = upstream.get((send.station_id, limit.connector_id, limit.purpose)) or upstream.get(
            (send.station_id, 0, limit.purpose)
        )
        if kept is not None and not wording.speaks(kept):
            kept = None  # kept while the station spoke the other generation
        if kept is not None and limit.purpose == profiles.TX:
            named = wording.transaction_of(kept)
            if named is not None and named != limit.transaction_id:
                kept = None  # the upstream's profile of an earlier transaction
        payload = wording.merged(limit, kept)
        assert payload is not None
        try:
            answer = await self.edge.command(send.station_id, "SetChargingProfile", payload)
        except StationAnswerFailed as exc:
            return "NotSupported" if exc.code in _NOT_SUPPORTED else None
        except ChargenetError:
            log.info(
                "a charging profile was not answered",
                extra={"fields": {"station": send.station_id, "purpose": limit.purpose}},
            )
            return None
        return str(answer.get("status"))


# Reading a site's state --------------------------------------------------------------------------------------


async def _load(
    session: AsyncSession, site_id: str, edge: StationSender, now: datetime, settings: power.Settings
) -> _SiteState:
    circuit_rows = list(await session.scalars(select(Circuit).where(Circuit.site_id == site_id).order_by(Circuit.id)))
    placed = (
        await session.execute(
            select(Station, StationCircuit, StationPresence, StationProfileAnswer)
            .join(StationCircuit, StationCircuit.station_id == Station.id)
            .outerjoin(StationPresence, StationPresence.station_id == Station.id)
            .outerjoin(StationProfileAnswer, StationProfileAnswer.station_id == Station.id)
            .where(Station.site_id == site_id)
            .order_by(Station.id)
        )
    ).all()
    stations: list[power.Station] = []
    generations: dict[str, str] = {}
    defaults_sent: dict[str, str | None] = {}
    for station, placement, presence, answer in placed:
        here = edge.generation_here(station.id)
        offline_since = None
        if here is not None:
            generations[station.id] = here
        elif presence is not None and presence.connected:
            generations[station.id] = presence.ocpp_version or "ocpp1.6"
        else:
            offline_since = (presence.disconnected_at if presence else None) or _NEVER
        unlimited = answer is not None and answer.answer in UNLIMITED_ANSWERS
        defaults_sent[station.id] = answer.defaults_sent if answer is not None else None
        stations.append(
            power.Station(
                station.id,
                placement.circuit_id,
                parse_phases(placement.phases),
                connectors=station.charge_points * (station.connectors_per_charge_point or 1),
                priority=placement.priority,
                offline_since=offline_since,
                unlimited=unlimited,
            )
        )
    on_circuits = {station.id for station in stations}
    rows = await open_transactions(session, site_id, on_circuits)
    sessions = [allocator_session(transaction, allowance) for transaction, allowance in rows]
    by_station = {station.id: station for station in stations}
    held = {transaction.id: allowance for transaction, allowance in rows if allowance is not None}
    below = [
        SessionDraw(
            int(entry.id),
            by_station[entry.station_id].circuit_id,
            entry.phases or by_station[entry.station_id].phases,
            allowance.sent_amps if (allowance := held.get(int(entry.id))) else None,
            allowance.sent_at if allowance else None,
        )
        for entry in sessions
    ]
    draws = await session_draws(session, below)
    # What a vehicle draws tells the allocator when it wants less than its allowance (its rules of demand and lending).
    sessions = [replace(entry, draw_a=draws.estimated.get(int(entry.id))) for entry in sessions]
    grids = await circuit_grids(
        session,
        {row.id: row.parent_id for row in circuit_rows},
        {row.id: row.meter_id for row in circuit_rows if row.meter_id is not None},
        below,
        draws.known,
        now,
        settings.meter_silent_after,
    )
    return _SiteState(
        circuits=[
            power.Circuit(
                row.id,
                row.parent_id,
                row.limit_a,
                row.margin_a,
                parse_phases(row.phases),
                metered=row.meter_id is not None,
                other_load_a=grids[row.id].other_load_a,
            )
            for row in circuit_rows
        ],
        circuit_limits={row.id: row.limit_a for row in circuit_rows},
        stations=stations,
        sessions=sessions,
        generations=generations,
        defaults_sent=defaults_sent,
        station_transactions={transaction.id: transaction.station_transaction_id for transaction, _ in rows},
        accepted_amps={transaction.id: allowance.sent_amps if allowance else None for transaction, allowance in rows},
        grids=grids,
    )


async def _upstream_profiles(store: Store, station_ids: set[str]) -> dict[tuple[str, int, str], Payload]:
    async with store.read() as session:
        rows = await session.scalars(
            select(UpstreamChargingProfile).where(UpstreamChargingProfile.station_id.in_(sorted(station_ids)))
        )
        return {(row.station_id, row.connector_id, row.purpose): load_payload(row.request) for row in rows}


# Deciding what to send ---------------------------------------------------------------------------------------


def defaults_text(defaults: dict[int, float]) -> str:
    """A station's safe defaults as stored: `connector:amps` by connector."""
    return ",".join(f"{connector}:{amps:g}" for connector, amps in sorted(defaults.items()))


def parse_defaults(text: str | None) -> dict[int, float]:
    if not text:
        return {}
    pairs = (item.split(":") for item in text.split(","))
    return {int(connector): float(amps) for connector, amps in pairs}


def _station_defaults(state: _SiteState, settings: power.Settings) -> dict[str, dict[int, float]]:
    every = power.safe_defaults(state.circuits, state.stations, settings)
    by_station: dict[str, dict[int, float]] = {}
    for (station_id, connector), amps in every.items():
        by_station.setdefault(station_id, {})[connector] = amps
    return by_station


def _sends(state: _SiteState, result: power.Round, settings: power.Settings) -> list[_Send]:
    """The profiles to send after a round: changed safe defaults first (so that a session starting meanwhile
    is held by them), then the allowances the round says to send or that a station has not accepted yet."""
    sends: list[_Send] = []
    by_id = {station.id: station for station in state.stations}
    defaults = _station_defaults(state, settings)
    for station in state.stations:
        generation = state.generations.get(station.id)
        if generation is None or station.unlimited:
            continue
        wanted = defaults.get(station.id, {})
        if defaults_text(wanted) == state.defaults_sent.get(station.id):
            continue
        for connector, amps in sorted(wanted.items()):
            limit = profiles.Limit(profiles.TX_DEFAULT, connector, amps, len(station.phases))
            sends.append(_Send(station.id, generation, limit))
    for allowance in result.allowances:
        station = by_id[allowance.station_id]
        generation = state.generations.get(station.id)
        if generation is None or station.unlimited:
            continue
        transaction_id = int(allowance.session_id)
        if not allowance.send and state.accepted_amps.get(transaction_id) == allowance.amps:
            continue
        named: int | str | None = transaction_id
        if generation == OCPP201:
            named = state.station_transactions.get(transaction_id)
        limit = profiles.Limit(profiles.TX, allowance.connector_id, allowance.amps, len(allowance.phases), named)
        sends.append(_Send(station.id, generation, limit, transaction_id))
    return sends


def _figures(state: _SiteState, result: power.Round) -> SiteFigures:
    figures = SiteFigures(limits=dict(state.circuit_limits))
    for load in result.circuits:
        for phase, amps in load.allocated_a.items():
            figures.allocated[(load.circuit_id, phase)] = amps
        figures.paused.setdefault(load.circuit_id, 0)
    for circuit_id, grid in state.grids.items():
        if grid.status is None:
            continue
        if grid.status.fault is not None:
            figures.falling_back[circuit_id] = grid.status.fault.value
        for phase, amps in (grid.status.measured_a or {}).items():
            figures.measured[(circuit_id, phase)] = amps
    circuit_of = {station.id: station.circuit_id for station in state.stations}
    for allowance in result.allowances:
        if allowance.paused is not None:
            circuit = circuit_of[allowance.station_id]
            figures.paused[circuit] = figures.paused.get(circuit, 0) + 1
    return figures


# Writing a round and the answers -----------------------------------------------------------------------------


async def _store_round(session: AsyncSession, site_id: str, result: power.Round, now: datetime) -> None:
    existing = {
        row.transaction_id: row
        for row in await session.scalars(select(PowerAllowance).where(PowerAllowance.site_id == site_id))
    }
    current = {int(allowance.session_id) for allowance in result.allowances}
    gone = set(existing) - current
    if gone:
        await session.execute(delete(PowerAllowance).where(PowerAllowance.transaction_id.in_(sorted(gone))))
    for allowance in result.allowances:
        transaction_id = int(allowance.session_id)
        row = existing.get(transaction_id)
        if row is None:
            row = PowerAllowance(transaction_id=transaction_id, site_id=site_id, station_id=allowance.station_id)
            session.add(row)
        row.amps = allowance.amps
        row.sent_at = allowance.sent_at
        row.paused_since = allowance.paused_since
        row.charging_since = allowance.charging_since
        row.updated_at = now


async def _store_samples(session: AsyncSession, site_id: str, state: _SiteState, now: datetime) -> None:
    """Keep each circuit's figures for the chart (the largest phase of each), and forget those past a day."""
    for circuit in state.circuits:
        grid = state.grids[circuit.id]
        measured = grid.status.measured_a if grid.status is not None else None
        session.add(
            SitePowerSample(
                circuit_id=circuit.id,
                at=now,
                site_id=site_id,
                limit_a=circuit.limit_a,
                measured_a=_largest(measured) if measured is not None else None,
                stations_a=_largest(grid.stations_a),
            )
        )
    await session.execute(
        delete(SitePowerSample).where(SitePowerSample.site_id == site_id, SitePowerSample.at < now - SAMPLES_KEPT)
    )


def _largest(amps: Mapping[Phase, float]) -> float:
    return round(max((amps.get(phase, 0.0) for phase in PHASES), default=0.0), 1)


async def _store_answers(
    session: AsyncSession, state: _SiteState, answers: dict[str, str], accepted: Sequence[_Send], now: datetime
) -> None:
    defaults: dict[str, dict[int, float]] = {}
    for send in accepted:
        if send.limit.purpose == profiles.TX_DEFAULT:
            defaults.setdefault(send.station_id, {})[send.limit.connector_id] = send.limit.amps
        elif send.transaction_id is not None:
            await session.execute(
                update(PowerAllowance)
                .where(PowerAllowance.transaction_id == send.transaction_id)
                .values(sent_amps=send.limit.amps)
            )
    for station_id, answer in answers.items():
        row = await session.get(StationProfileAnswer, station_id)
        if row is None:
            row = StationProfileAnswer(station_id=station_id)
            session.add(row)
        row.answer = answer
        row.answered_at = now
        if station_id in defaults:
            sent = parse_defaults(state.defaults_sent.get(station_id))
            sent.update(defaults[station_id])
            row.defaults_sent = defaults_text(sent)


# The upstream's profiles on a station behind one ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EdgeLimits:
    """What the edge allows a station's connectors now, per purpose, for the merge with an upstream's profile."""

    defaults: dict[int, float]
    allowances: dict[int, tuple[int | str, float]]  # connector -> (its transaction as the station knows it, amperes)
    phases: int


async def edge_limits(session: AsyncSession, station_id: str, generation: str = OCPP16) -> EdgeLimits | None:
    """None when the station hangs on no circuit: the upstream's profiles reach it as they are. A 2.0.1 station's
    transactions are named by its own ids."""
    placement = await session.get(StationCircuit, station_id)
    if placement is None:
        return None
    answer = await session.get(StationProfileAnswer, station_id)
    rows = (
        await session.execute(
            select(
                EdgeTransaction.ocpp_connector_id,
                PowerAllowance.transaction_id,
                EdgeTransaction.station_transaction_id,
                PowerAllowance.amps,
            )
            .join(PowerAllowance, PowerAllowance.transaction_id == EdgeTransaction.id)
            .where(EdgeTransaction.station_id == station_id, EdgeTransaction.stopped_at.is_(None))
        )
    ).all()
    return EdgeLimits(
        defaults=parse_defaults(answer.defaults_sent if answer else None),
        allowances={
            connector: (own if generation == OCPP201 and own is not None else transaction_id, amps)
            for connector, transaction_id, own, amps in rows
        },
        phases=len(parse_phases(placement.phases)),
    )


def edge_limit(limits: EdgeLimits, connector_id: int, purpose: str) -> profiles.Limit | None:
    if purpose == profiles.TX_DEFAULT:
        amps = limits.defaults.get(connector_id)
        if amps is None and connector_id == 0 and limits.defaults:
            amps = min(limits.defaults.values())
        return None if amps is None else profiles.Limit(purpose, connector_id, amps, limits.phases)
    if purpose == profiles.TX and connector_id in limits.allowances:
        transaction_id, amps = limits.allowances[connector_id]
        return profiles.Limit(purpose, connector_id, amps, limits.phases, transaction_id)
    return None


async def keep_upstream_profile(
    session: AsyncSession, station_id: str, request: Payload, now: datetime, wording: profiles.Wording
) -> None:
    connector_id, purpose = wording.key(request)
    row = await session.get(UpstreamChargingProfile, (station_id, connector_id, purpose))
    if row is None:
        row = UpstreamChargingProfile(station_id=station_id, connector_id=connector_id, purpose=purpose)
        session.add(row)
    row.request = dump_payload(request)
    row.received_at = now


async def drop_upstream_profiles(
    session: AsyncSession, station_id: str, request: Payload, wording: profiles.Wording
) -> list[tuple[int, str]]:
    """Forget the upstream's profiles a ClearChargingProfile names; returns their (connector, purpose)."""
    rows = list(
        await session.scalars(select(UpstreamChargingProfile).where(UpstreamChargingProfile.station_id == station_id))
    )
    cleared = [
        row
        for row in rows
        if wording.speaks(kept := load_payload(row.request)) and wording.clear_matches(request, row.connector_id, kept)
    ]
    for row in cleared:
        await session.delete(row)
    return [(row.connector_id, row.purpose) for row in cleared]
