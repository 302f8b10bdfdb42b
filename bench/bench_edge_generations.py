"""The edge's OCPP 2.0.1 paths beside its 1.6 ones, each against the bare `websockets` responder of the edge
benchmark (`bench.ocpp_baseline`, which checks each CALL against the schemas of the generation negotiated).

The edge and the bare responder run side by side. For each of them, two fleets of N stations, one speaking 1.6
and one 2.0.1, connect and go through the paths:

- connecting: N handshakes with Basic auth, 200 at a time;
- Boot + Status: each station sends a BootNotification and a StatusNotification (Available) for its connector
  (EVSE 1), on a fresh connection;
- Heartbeat round trips, `CHARGENET_BENCH_ROUNDS` per station;
- a transaction stream, CHARGES transactions on each of the fleet's first CHARGING stations: a 2.0.1 station
  tells each in TransactionEvents (Started with its token, EVSE and begin reading, ROUNDS Updated with a reading,
  Ended); a 1.6 station tells it twice over, as two streams:
  - lean: StartTransaction, ROUNDS MeterValues with the transaction id it was given, StopTransaction;
  - with statuses: the same with the StatusNotifications a real station sends around it (Preparing before
    StartTransaction, Charging after it, Finishing after StopTransaction). The edge derives those three statuses
    from a 2.0.1 transaction, so only this stream raises the same events as the 2.0.1 one (a ChargePointStatus
    event and a history row each); the lean one raises the transaction's events alone. The benchmark reads what
    each stream raised from the edge's store and fails when the 2.0.1 stream and this one differ.
  At the edge each transaction is authorized (the tag is in no list: Invalid, and stored all the same), stored
  and raises its events.

A run is `CHARGENET_BENCH_GENERATION_ROUNDS` rounds (default 4; an odd number is raised to the next even one), each
of which reconnects all four fleets and measures every path in WAVES waves (`CHARGENET_BENCH_GENERATION_WAVES`,
default 4). A wave is four steps a few seconds apart: each generation on the bare responder and then on the edge,
the generation going first alternating from one wave to the next and from one round to the next. A server's figure
for a generation's path is the run's: all its calls over all the time they took (the rate), and all its CPU time
over all its calls (its threads' own counts, its batched writes included, its idle CPU taken off). 2.0.1's figure is
a ratio to the bare responder's of the same generation, set against 1.6's: the bare responder too pays for 2.0.1's
larger frames and richer schemas. The target (2.0.1 at least 0.9 of 1.6) is decided by rate; the CPU comparison
stands beside it, and each round's own comparison gives the spread.

Each step starts once both servers are quiet and is counted until the edge has written its batched writes
(`SETTLE_SECONDS`), so that no figure carries another's. `CHARGENET_BENCH_GENERATION_STATIONS` sets N (default
1,000); the transaction streams run on the first `CHARGENET_BENCH_GENERATION_CHARGING` stations of each fleet (default
250). A run of both stores takes about 35 minutes.
The edge runs on SQLite, then on a fresh PostgreSQL database when `make bench` has a server (as `bench_edge`).
"""

from __future__ import annotations

import asyncio
import base64
import gc
import itertools
import json
import os
import resource
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from bench.bench_edge import PASSWORD, ROUNDS, STORM_TIMEOUT, _free_port, _start, _store_flags
from bench.common import POSTGRES_SERVER, Result, create_database, drop_database
from chargenet.app import open_context
from chargenet.config import load_settings
from chargenet.services import companies, sites, stations
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import ConnectorStatusHistory, OutboxEvent

STATIONS = int(os.environ.get("CHARGENET_BENCH_GENERATION_STATIONS", "1000"))  # per generation and server
# The first CHARGING of them run the transaction streams; the rest stay connected meanwhile. A bare responder's step
# of the short paths with 250 stations took 60 to 150 ms, in which one 10 ms slice the machine gave elsewhere moved
# its figure by up to a sixth; a transaction step of 250 stations already takes seconds at the edge.
CHARGING = max(1, min(STATIONS, int(os.environ.get("CHARGENET_BENCH_GENERATION_CHARGING", "250"))))
# An even number of rounds: the generation going first alternates by round, and what falls at fixed points of a
# round's sequence lands on one generation in one round and on the other in the next. The edge's collector is one: a
# middle-generation collection (about 200 ms with two thousand stations connected) every three waves of connecting
# or so fell, in one round, twice on 2.0.1's steps and never on 1.6's, and in the next the other way round.
_ROUNDS_ASKED = int(os.environ.get("CHARGENET_BENCH_GENERATION_ROUNDS", "4"))
GENERATION_ROUNDS = max(2, _ROUNDS_ASKED + _ROUNDS_ASKED % 2)
# A path is measured in WAVES waves a round, each wave a step of each generation on each server, one after the
# other. On this shared 2-core machine the CPU a call of one and the same server and path moved by a factor of 1.8
# from one minute to the next: a step of one generation timed a minute after the other's compared two machines.
# Within a wave the four steps are seconds apart, and the waves alternate the generation going first, so what the
# machine does to the figures falls on both generations alike. A wave is still short (half a second or so for the
# bare responder), and one of the edge's collections landing in it moved its figure by a third: a run's figures are
# its sums over all the waves, not a median of each wave's.
WAVES = int(os.environ.get("CHARGENET_BENCH_GENERATION_WAVES", "4"))
# What a wave asks of each station: a connection (the wave before's closed again and its departures written first);
# a BootNotification and a StatusNotification on a fresh connection (a station boots once a connection; the fleet
# reconnects, uncounted); HEARTBEATS Heartbeats; CHARGES transactions (the first CHARGING stations). The bare
# responder's steps of a thousand stations then take half a second or so.
HEARTBEATS = ROUNDS
CHARGES = 1
OCPP16, OCPP201 = "ocpp1.6", "ocpp2.0.1"
GENERATIONS = (OCPP16, OCPP201)
LABEL = {OCPP16: "1.6", OCPP201: "2.0.1"}
PREFIX = {OCPP16: "G", OCPP201: "H"}  # the fleets' station ids: G00000..., H00000...
TARGET = 0.9  # a 2.0.1 figure against the 1.6 one of the same round
# The edge writes the message log (every frame, each station's last heartbeat) in a batch every second. A step timed
# right after another would pay for the other's batch: 500 stations' Heartbeat step left 5,000 frames, about 60 ms
# of CPU (100 ms and more of wall time) for SQLite to write, which landed in the 2.0.1 fleet's step timed next (a
# thousand stations' leave twice as many). Every step starts once the batches of the one before have been written:
# the last batch starts within a second of the step's last frame and takes a few hundred milliseconds at most on a
# busy machine. The bare responder writes nothing behind its answers; it only gets a moment for the last frames'
# loose ends.
SETTLE_SECONDS = 1.5
BARE_SETTLE_SECONDS = 0.2
# The settle time is what a step's own batches take; whatever else a server still has to do (on PostgreSQL, the
# departures of the round before, written as the next round's first step ran) is waited out before each step:
# both servers below a twentieth of a core over a fifth of a second, for at most QUIET_LIMIT_SECONDS.
QUIET_CPU = 0.05
TICK_SLACK_SECONDS = 0.03  # the process's count lags its threads' by up to a 10 ms tick or two
QUIET_WINDOW_SECONDS = 0.2
QUIET_LIMIT_SECONDS = 10.0
EDGE, BARE = "edge", "bare"

CONNECTING, BOOT, HEARTBEAT = "connecting", "Boot + Status", "Heartbeat"
TRANSACTIONS = "transaction stream"
TRANSACTIONS_WITH_STATUSES = "transaction stream with statuses"
# A round's stages, in order, each all its waves; in each, a generation runs those of the stage's paths it has.
# The transaction stream with statuses runs first, all its waves: its station ends each transaction as a real one
# does, its connector reported Available again, so that the next one (and the lean stream's) starts on a free
# connector. A 2.0.1 lean transaction leaves its connector as a station that never reported the cable unplugged
# does: Occupied again after it reads Finishing, not Preparing, so no stream with statuses follows a lean one.
STAGES = ((CONNECTING,), (BOOT,), (HEARTBEAT,), (TRANSACTIONS_WITH_STATUSES,), (TRANSACTIONS,))
PATHS = {
    OCPP16: (CONNECTING, BOOT, HEARTBEAT, TRANSACTIONS_WITH_STATUSES, TRANSACTIONS),
    OCPP201: (CONNECTING, BOOT, HEARTBEAT, TRANSACTIONS_WITH_STATUSES, TRANSACTIONS),
}
Call = tuple[str, dict[str, object]]  # an action and its payload
Key = tuple[str, str]  # generation, path


@dataclass(frozen=True)
class Comparison:
    """A 2.0.1 path set against the same path of 1.6."""

    label: str
    path: str
    same_events: bool = False  # checked: at the edge, both generations' streams raised the same events


COMPARISONS = (
    Comparison(CONNECTING, CONNECTING),
    Comparison(BOOT, BOOT),
    Comparison(HEARTBEAT, HEARTBEAT),
    Comparison("lean transaction stream (no status changes)", TRANSACTIONS, same_events=True),
    Comparison(
        "transaction stream with statuses (Preparing, Charging, Finishing, Available)", TRANSACTIONS_WITH_STATUSES, True
    ),
)


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


async def _prepare_store(data_dir: Path, database_url: str | None) -> None:
    context = await open_context(load_settings(_store_flags(data_dir, database_url), {}))
    try:
        hasher, cipher = context.keys.secret_hasher(), context.keys.credential_cipher()
        async with context.store.transaction() as session:
            now = context.clock.now()
            company = await companies.create_company(session, OPERATOR, name="Bench", now=now)
            site = await sites.create_site(session, OPERATOR, cipher, company_id=company.id, name="Bench", now=now)
            for prefix in PREFIX.values():
                for n in range(STATIONS):
                    await stations.create_station(
                        session,
                        OPERATOR,
                        hasher,
                        cipher,
                        site_id=site.id,
                        station_id=f"{prefix}{n:05d}",
                        now=now,
                        password=PASSWORD,
                    )
    finally:
        await context.close()


# What each fleet sends ------------------------------------------------------------------------------------------


def _boot_and_status(generation: str) -> list[Call]:
    if generation == OCPP16:
        return [("BootNotification", {"chargePointVendor": "Bench", "chargePointModel": "Gen"}), _available(generation)]
    return [
        ("BootNotification", {"chargingStation": {"model": "Gen", "vendorName": "Bench"}, "reason": "PowerUp"}),
        _available(generation),
    ]


def _available(generation: str) -> Call:
    if generation == OCPP16:
        return ("StatusNotification", _status_16("Available"))
    return ("StatusNotification", {"timestamp": _now(), "connectorStatus": "Available", "evseId": 1, "connectorId": 1})


def _status_16(status: str) -> dict[str, object]:
    return {"connectorId": 1, "errorCode": "NoError", "status": status, "timestamp": _now()}


def _energy_201(wh: int, context: str) -> list[dict[str, object]]:
    sampled = {"value": wh, "context": context, "measurand": "Energy.Active.Import.Register"}
    return [{"timestamp": _now(), "sampledValue": [sampled]}]


def _transaction_event(transaction_id: str, seq_no: int, event_type: str, **fields: object) -> Call:
    payload = {
        "eventType": event_type,
        "timestamp": _now(),
        "triggerReason": "MeterValuePeriodic",
        "seqNo": seq_no,
        "transactionInfo": {"transactionId": transaction_id},
        **fields,
    }
    return ("TransactionEvent", payload)


def _transaction_201(transaction_id: str, n: int, *, statuses: bool) -> list[Call]:
    """One 2.0.1 transaction: its TransactionEvents alone, or told with the connector's status and the charging
    state, as a station does from plugging in (Occupied: Preparing) to charging (Charging) and the end (Finishing)."""
    occupied = {"timestamp": _now(), "connectorStatus": "Occupied", "evseId": 1, "connectorId": 1}
    token = {"idToken": f"TAG{n}", "type": "ISO14443"}
    info: dict[str, object] = {"transactionId": transaction_id}
    if statuses:
        info["chargingState"] = "Charging"
    started = _transaction_event(
        transaction_id,
        0,
        "Started",
        transactionInfo=info,
        evse={"id": 1, "connectorId": 1},
        idToken=token,
        meterValue=_energy_201(0, "Transaction.Begin"),
    )
    updated = [
        _transaction_event(transaction_id, r, "Updated", meterValue=_energy_201(100 * r, "Sample.Periodic"))
        for r in range(1, ROUNDS + 1)
    ]
    ended = _transaction_event(
        transaction_id, ROUNDS + 1, "Ended", meterValue=_energy_201(100 * (ROUNDS + 1), "Transaction.End")
    )
    if not statuses:
        return [started, *updated, ended]
    return [("StatusNotification", occupied), started, *updated, ended, _available(OCPP201)]


async def _transaction_16(socket: ClientConnection, n: int, *, statuses: bool) -> int:
    """One 1.6 transaction, with the StatusNotifications around it or without; the calls it made."""
    calls = 0

    async def call(action: str, payload: dict[str, object]) -> dict[str, object]:
        nonlocal calls
        calls += 1
        return await _call(socket, action, payload)

    if statuses:
        await call("StatusNotification", _status_16("Preparing"))
    start = {"connectorId": 1, "idTag": f"TAG{n}", "meterStart": 0, "timestamp": _now()}
    transaction_id = (await call("StartTransaction", start))["transactionId"]
    if statuses:
        await call("StatusNotification", _status_16("Charging"))
    for r in range(1, ROUNDS + 1):
        reading = {"timestamp": _now(), "sampledValue": [{"value": str(100 * r)}]}
        await call("MeterValues", {"connectorId": 1, "transactionId": transaction_id, "meterValue": [reading]})
    await call(
        "StopTransaction", {"transactionId": transaction_id, "meterStop": 100 * (ROUNDS + 1), "timestamp": _now()}
    )
    if statuses:
        await call("StatusNotification", _status_16("Finishing"))
        await call("StatusNotification", _status_16("Available"))
    return calls


class Fleet:
    """N stations of one generation holding their connections to one server, for one round."""

    def __init__(self, url: str, generation: str, round_number: int) -> None:
        self.url = url
        self.generation = generation
        self.round_number = round_number  # the 2.0.1 transactions' ids differ from one round to the next
        self.sockets: list[ClientConnection] = []
        self.answered = 0  # calls (or connections) of the latest step

    async def run(self, path: str, wave: int = 0) -> float:
        """Run `path` on every station at once (a transaction stream on the first CHARGING): connections or calls
        answered a second."""
        if path == CONNECTING:
            return await self._connect_all()
        if path == BOOT:
            return await self._sequences(lambda n: _boot_and_status(self.generation))
        if path == HEARTBEAT:
            return await self._sequences(lambda n: [("Heartbeat", {})] * HEARTBEATS)
        statuses = path == TRANSACTIONS_WITH_STATUSES
        if self.generation == OCPP201:
            named = f"{'S' if statuses else 'T'}{self.round_number}-{wave}"
            return await self._sequences(
                lambda n: [
                    call
                    for charge in range(CHARGES)
                    for call in _transaction_201(f"{named}-{n}-{charge}", n, statuses=statuses)
                ],
                charging=True,
            )

        async def charges_16(n: int, socket: ClientConnection) -> int:
            return sum([await _transaction_16(socket, n, statuses=statuses) for _ in range(CHARGES)])

        return await self._each(charges_16, charging=True)

    async def _open(self, n: int) -> ClientConnection:
        station_id = f"{PREFIX[self.generation]}{n:05d}"
        token = base64.b64encode(f"{station_id}:{PASSWORD}".encode()).decode()
        return await connect(
            f"{self.url}/{station_id}",
            subprotocols=[Subprotocol(self.generation)],
            additional_headers={"Authorization": f"Basic {token}"},
            open_timeout=STORM_TIMEOUT,
            ping_interval=None,
        )

    async def _connect_all(self) -> float:
        semaphore = asyncio.Semaphore(200)

        async def limited(n: int) -> ClientConnection:
            async with semaphore:
                return await self._open(n)

        start = time.perf_counter()
        self.sockets = list(await asyncio.gather(*(limited(n) for n in range(STATIONS))))
        assert all(s.subprotocol == self.generation for s in self.sockets)
        self.answered = STATIONS
        return STATIONS / (time.perf_counter() - start)

    async def _each(self, station: Callable[[int, ClientConnection], Awaitable[int]], charging: bool = False) -> float:
        """Every station (the first CHARGING when `charging`) runs `station` at once; calls answered per second."""
        start = time.perf_counter()
        sockets = self.sockets[:CHARGING] if charging else self.sockets
        calls = await asyncio.gather(*(station(n, s) for n, s in enumerate(sockets)))
        self.answered = sum(calls)
        return self.answered / (time.perf_counter() - start)

    async def _sequences(self, make: Callable[[int], list[Call]], charging: bool = False) -> float:
        async def station(n: int, socket: ClientConnection) -> int:
            calls = make(n)
            for action, payload in calls:
                await _call(socket, action, payload)
            return len(calls)

        return await self._each(station, charging)

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.sockets), return_exceptions=True)


async def _call(socket: ClientConnection, action: str, payload: dict[str, object]) -> dict[str, object]:
    frame = [2, str(next(_MESSAGE_IDS)), action, payload]  # an id used once on a connection, as OCPP asks
    await socket.send(json.dumps(frame))
    answer = json.loads(await socket.recv())
    assert answer[0] == 3 and answer[1] == frame[1], (frame, answer)
    return dict(answer[2])


_MESSAGE_IDS = itertools.count()


# What the edge raised -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoreMark:
    """How far the edge's outbox and status history went before a step."""

    event_position: int
    history_id: int


async def _mark(store: Store) -> StoreMark:
    async with store.read() as session:
        position = await session.scalar(select(func.coalesce(func.max(OutboxEvent.position), 0)))
        history_id = await session.scalar(select(func.coalesce(func.max(ConnectorStatusHistory.id), 0)))
        return StoreMark(int(position or 0), int(history_id or 0))


async def _raised_since(store: Store, mark: StoreMark) -> Counter[str]:
    """The events the edge raised and the status history rows it wrote after `mark`, by kind."""
    raised: Counter[str] = Counter()
    async with store.read() as session:
        events = await session.execute(
            select(OutboxEvent.event_type, OutboxEvent.body).where(OutboxEvent.position > mark.event_position)
        )
        for event_type, body in events:
            status = json.loads(body)["payload"].get("status", "")
            raised[f"{event_type} {status}".strip()] += 1
        history = await session.scalars(
            select(ConnectorStatusHistory.status).where(ConnectorStatusHistory.id > mark.history_id)
        )
        for status in history:
            raised[f"history row {status}"] += 1
    return raised


# Measuring ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CpuMark:
    """A server's CPU time at one moment: its process's count (every thread's, those gone too, in 10 ms ticks)
    and, finer, each live thread's in nanoseconds."""

    ticks: float  # seconds
    threads: dict[int, float]  # seconds, by thread id


@dataclass(frozen=True)
class Server:
    name: str  # EDGE or BARE
    url: str
    pid: int
    settle: float  # seconds a step waits for the server's writes behind its answers

    def mark(self) -> CpuMark:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        threads = {}
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                threads[int(task.name)] = int((task / "schedstat").read_text().split()[0]) / 1e9
            except (FileNotFoundError, ProcessLookupError):
                continue  # a thread that ended as it was read
        return CpuMark((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), threads)

    def cpu_since(self, before: CpuMark) -> float:
        """The CPU seconds the server used since `before`: the sum of its threads' (in nanoseconds; a wave of
        Boot + Status is 15 ticks of the process's count, too coarse to set one generation against the other),
        unless a thread ended meanwhile, whose time only the ticks still count."""
        now = self.mark()
        ticks = now.ticks - before.ticks
        if not before.threads.keys() <= now.threads.keys():
            return ticks
        threads = sum(used - before.threads.get(tid, 0.0) for tid, used in now.threads.items())
        # A thread that began and ended in between is in the ticks alone: beyond their coarseness, they win.
        return ticks if ticks - threads > TICK_SLACK_SECONDS else threads


@dataclass(frozen=True)
class Step:
    """One wave of one path of one generation on one server. CPU is counted until the next step starts, so with
    the batched writes the step left."""

    rate: float
    cpu: float  # seconds
    wall: float  # seconds
    calls: int


@dataclass
class Round:
    """What one round found, wave by wave. The machine's other load slows the rates but hardly the CPU a call
    takes, so on a busy machine the CPU figures compare the generations better. (PostgreSQL's own CPU is not
    counted: it is another process.)"""

    number: int
    first: str  # the generation measured first in the round's first wave of each stage
    steps: dict[tuple[str, str, str], list[Step]] = field(default_factory=dict)  # by server, generation, path
    idle: dict[str, float] = field(default_factory=dict)  # a server's CPU seconds a second, nothing asked
    raised: dict[Key, Counter[str]] = field(default_factory=dict)  # the edge's transaction streams' events
    waited: list[float] = field(default_factory=list)  # seconds each step waited for quiet


def _figures(rounds: list[Round], server: str, generation: str, path: str) -> tuple[float, float]:
    """A server's figures for one generation's path over all the waves of `rounds`: its rate (all the calls over all
    the time they took) and its CPU seconds a call (all its CPU, each round's idle CPU over as long taken off, over
    all the calls)."""
    calls, busy, cpu = 0, 0.0, 0.0
    for found in rounds:
        for step in found.steps[server, generation, path]:
            calls += step.calls
            busy += step.calls / step.rate
            cpu += step.cpu - found.idle[server] * step.wall
    return calls / busy, max(cpu, 1e-7 * calls) / calls  # never 0


def _compare(rounds: list[Round], path: str) -> tuple[float, float]:
    """2.0.1's ratio to the bare responder against 1.6's over the waves of `rounds`: by rate, and by CPU a call."""
    by_rate, by_cpu = {}, {}
    for generation in GENERATIONS:
        edge_rate, edge_cpu = _figures(rounds, EDGE, generation, path)
        bare_rate, bare_cpu = _figures(rounds, BARE, generation, path)
        by_rate[generation], by_cpu[generation] = edge_rate / bare_rate, bare_cpu / edge_cpu
    return by_rate[OCPP201] / by_rate[OCPP16], by_cpu[OCPP201] / by_cpu[OCPP16]


async def _round(number: int, servers: list[Server], store: Store) -> Round:
    """Every path for both generations on both servers, wave by wave: in each wave of a stage, each generation's
    steps on the bare responder and on the edge, one after the other, the generation going first alternating from
    one wave to the next and the round's first wave alternating from one round to the next. What the machine's
    other load does to the figures then falls on both generations alike, within seconds."""
    order = GENERATIONS if number % 2 == 0 else GENERATIONS[::-1]
    found = Round(number, first=order[0])
    fleets = {(s.name, g): Fleet(s.url, g, number) for s in servers for g in GENERATIONS}

    async def timed(server: Server, generation: str, path: str, wave: int) -> Step:
        fleet = fleets[server.name, generation]
        if path in (CONNECTING, BOOT):
            await fleet.close()  # the wave before's connections (none in the first)
            if path == BOOT:
                await fleet.run(CONNECTING)  # a station boots once a connection
            # The edge writes those departures and arrivals in its next batch, within the settle time. The wait for
            # quiet below looks at a fifth of a second only, which fits between two batches: a batch still pending
            # would land in the step.
            await asyncio.sleep(server.settle)
        found.waited.append(await _quiet(servers))
        # This process's collections (its clients' objects) would land in one step or another: none while timing,
        # one before.
        gc.collect()
        gc.disable()
        try:
            cpu, start = server.mark(), time.perf_counter()
            await fleet.run(path, wave)
            running = time.perf_counter() - start
        finally:
            gc.enable()
        await asyncio.sleep(server.settle)
        return Step(fleet.answered / running, server.cpu_since(cpu), time.perf_counter() - start, fleet.answered)

    try:
        for stage in STAGES:
            for wave in range(WAVES):
                for generation in order if wave % 2 == 0 else order[::-1]:
                    for path in (p for p in stage if p in PATHS[generation]):
                        for server in servers:
                            watched = server.name == EDGE and path in (TRANSACTIONS, TRANSACTIONS_WITH_STATUSES)
                            mark = await _mark(store) if watched else None
                            step = await timed(server, generation, path, wave)
                            found.steps.setdefault((server.name, generation, path), []).append(step)
                            if mark is not None:
                                raised = found.raised.setdefault((generation, path), Counter())
                                raised.update(await _raised_since(store, mark))
            if stage == (CONNECTING,):
                await _quiet(servers)
                marks = {s.name: s.mark() for s in servers}
                start = time.perf_counter()
                await asyncio.sleep(2 * SETTLE_SECONDS)
                wall = time.perf_counter() - start
                found.idle = {s.name: s.cpu_since(marks[s.name]) / wall for s in servers}
    finally:
        await asyncio.gather(*(fleet.close() for fleet in fleets.values()))
        await asyncio.sleep(SETTLE_SECONDS)  # the edge writes the stations' departures before the next round
    return found


async def _quiet(servers: list[Server]) -> float:
    """Wait until no server is busy with earlier work (QUIET_CPU); the seconds waited."""
    start = time.perf_counter()
    while time.perf_counter() - start < QUIET_LIMIT_SECONDS:
        marks, began = [s.mark() for s in servers], time.perf_counter()
        await asyncio.sleep(QUIET_WINDOW_SECONDS)
        wall = time.perf_counter() - began
        if all(s.cpu_since(mark) / wall <= QUIET_CPU for s, mark in zip(servers, marks, strict=True)):
            break
    return time.perf_counter() - start


async def _measure(servers: list[Server], store_url: str, store_name: str) -> list[Round]:
    store = Store(store_url)
    rounds: list[Round] = []
    try:
        for number in range(GENERATION_ROUNDS):
            start = time.perf_counter()
            found = await _round(number, servers, store)
            rounds.append(found)
            print(_round_line(found, store_name, time.perf_counter() - start), flush=True)
        print(_raised_line(rounds[0], store_name), flush=True)
    finally:
        await store.dispose()
    return rounds


def _round_line(found: Round, store_name: str, seconds: float) -> str:
    figures = "; ".join(
        "{} {:.2f} by rate, {:.2f} by CPU".format(c.path, *_compare([found], c.path)) for c in COMPARISONS
    )
    load = os.getloadavg()[0]
    connecting = ", ".join(
        f"{server} {LABEL[generation]} {_figures([found], server, generation, CONNECTING)[0]:.0f}/s"
        for generation in GENERATIONS
        for server in (BARE, EDGE)
    )
    quiet = f"longest wait for quiet {max(found.waited):.1f} s" + (
        f" ({sum(w >= QUIET_LIMIT_SECONDS for w in found.waited)} steps began at the limit)"
        if max(found.waited) >= QUIET_LIMIT_SECONDS
        else ""
    )
    return (
        f"  {store_name} round {found.number + 1} ({LABEL[found.first]} first, {seconds:.0f} s, "
        f"load average {load:.1f}), 2.0.1 against 1.6: {figures}; connecting: {connecting}; "
        f"{quiet}"
    )


def _raised_line(found: Round, store_name: str) -> str:
    transactions = CHARGING * CHARGES * WAVES
    streams = "; ".join(
        f"{LABEL[generation]} {path}: "
        + ", ".join(f"{kind} {count / transactions:g}" for kind, count in sorted(raised.items()))
        for (generation, path), raised in sorted(found.raised.items())
    )
    return f"  {store_name}, what each transaction stream raised at the edge a transaction (round 1): {streams}"


def _events_differ(rounds: list[Round], path: str) -> str:
    """Why the generations' streams of `path` did not raise the same events at the edge in some round ("" when
    they did): the events by type and status, and the status history rows."""
    for found in rounds:
        ours, theirs = found.raised[OCPP201, path], found.raised[OCPP16, path]
        if not ours or ours != theirs:
            return f"round {found.number + 1}: the 2.0.1 {path} raised {dict(ours)}, the 1.6 one {dict(theirs)}"
    return ""


# Reporting ------------------------------------------------------------------------------------------------------


def run() -> list[Result]:
    # Four fleets of STATIONS connections each, in this one process.
    needed = 4 * STATIONS + 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise SystemExit(
            f"CHARGENET_BENCH_GENERATION_STATIONS={STATIONS} needs {needed} open files; this machine allows {hard}"
        )
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    results = _run(None)
    server_url = os.environ.get(POSTGRES_SERVER)
    if server_url:
        database_url = asyncio.run(create_database(server_url))
        try:
            results += _run(database_url)
        finally:
            asyncio.run(drop_database(server_url, database_url))
    return results


def _run(database_url: str | None) -> list[Result]:
    store_name = "PostgreSQL" if database_url else "SQLite"
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "data"
        base_port, edge_port = _free_port(), _free_port()
        asyncio.run(_prepare_store(data, database_url))
        store_url = load_settings(_store_flags(data, database_url), {}).database_url
        serve = ["-m", "chargenet", "serve", "--port", str(edge_port), "--data-dir", str(data), "--log-level", "error"]
        if database_url:
            serve += ["--database-url", database_url]
        baseline = _start(["-m", "bench.ocpp_baseline", str(base_port), PASSWORD, "--no-collections"], base_port)
        try:
            edge = _start(serve, edge_port)
            try:
                servers = [
                    Server(BARE, f"ws://127.0.0.1:{base_port}/ocpp", baseline.pid, BARE_SETTLE_SECONDS),
                    Server(EDGE, f"ws://127.0.0.1:{edge_port}/ocpp", edge.pid, SETTLE_SECONDS),
                ]
                rounds = asyncio.run(_measure(servers, store_url, store_name))
            finally:
                edge.terminate()
                edge.wait()
        finally:
            baseline.kill()
            baseline.wait()
    return _results(rounds, f"{STATIONS} stations per generation, {CHARGING} charging, {store_name}")


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def _results(rounds: list[Round], n: str) -> list[Result]:
    count = f"{len(rounds)} rounds of {WAVES} waves"
    unit = {CONNECTING: "connections/s"}
    keys = [(generation, path) for generation in GENERATIONS for path in PATHS[generation]]
    results = [
        Result(
            f"edge {LABEL[generation]} {path}, {count} ({n})",
            _figures(rounds, EDGE, generation, path)[0],
            _figures(rounds, BARE, generation, path)[0],
            unit.get(path, "calls/s"),
        )
        for generation, path in keys
    ]
    results += [
        Result(
            f"edge {LABEL[generation]} {path}, CPU time a call, {count} ({n})",
            _figures(rounds, EDGE, generation, path)[1] * 1e6,
            _figures(rounds, BARE, generation, path)[1] * 1e6,
            "us",
        )
        for generation, path in keys
    ]
    # The target, on the run's figures: 2.0.1's ratio to the bare responder against 1.6's. The bare responder
    # speaking 2.0.1 pays for its larger frames and richer schemas too. The spread is the rounds' own comparisons.
    for comparison in COMPARISONS:
        by_rate, by_cpu = _compare(rounds, comparison.path)
        rate_rounds, cpu_rounds = zip(*(_compare([r], comparison.path) for r in rounds), strict=True)
        check = _events_differ(rounds, comparison.path) if comparison.same_events else ""
        results += [
            Result(
                f"edge 2.0.1 {comparison.label}: its ratio to the bare responder against 1.6's, {count}, "
                f"rounds {_spread(list(rate_rounds))} ({n})",
                by_rate,
                1.0,
                "x 1.6's",
                target=TARGET,
                failure=check,
            ),
            Result(
                f"edge 2.0.1 {comparison.label}: the same by CPU time a call, {count}, "
                f"rounds {_spread(list(cpu_rounds))} ({n})",
                by_cpu,
                1.0,
                "x 1.6's",
                failure=check,
            ),
        ]
    return results
