"""The edge's OCPP 2.0.1 paths beside its 1.6 ones, each against the bare `websockets` responder of the edge
benchmark (`bench.ocpp_baseline`, which checks each CALL against the schemas of the generation negotiated).

Two fleets of N stations each, one speaking 1.6 and one 2.0.1, connect to the same server and hold their
connections; each path is measured for one fleet and then the other, so both meet the same machine:

- connecting: N handshakes with Basic auth, 200 at a time;
- Boot + Status: each station sends a BootNotification and a StatusNotification for its connector (EVSE 1);
- Heartbeat round trips, `CHARGENET_BENCH_ROUNDS` per station;
- a transaction stream: a 1.6 station sends StartTransaction, ROUNDS MeterValues with the transaction id it was
  given, and StopTransaction; a 2.0.1 station the same transaction told in TransactionEvents (Started with its
  token, EVSE and begin reading, ROUNDS Updated with a reading, Ended). At the edge each is authorized (the tag is
  in no list: Invalid, and stored all the same), stored and raises its events.

Each figure is compared with the bare responder's for the same generation, and 2.0.1's ratio with 1.6's of the
same run (target: at least 0.9): the bare responder too is slower with 2.0.1's larger frames and richer schemas,
so the ratios, not the raw rates, say what the edge's 2.0.1 face costs beside its 1.6 one. Each step starts on a
settled edge (`SETTLE_SECONDS`), so that no fleet's figure carries the batched writes of the step before it. The
same ratios are also given by the server's CPU time a call (its batched writes included), which, unlike the rates,
the machine's other load does not move much.
`CHARGENET_BENCH_STATIONS` sets N (default 1000). The edge runs on SQLite, then on a fresh PostgreSQL database
when `make bench` has a server (as `bench_edge`).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from bench.bench_edge import PASSWORD, ROUNDS, STATIONS, STORM_TIMEOUT, _free_port, _start, _store_flags
from bench.common import POSTGRES_SERVER, Result, create_database, drop_database
from chargenet.app import open_context
from chargenet.config import load_settings
from chargenet.services import companies, sites, stations
from chargenet.services.callers import OPERATOR

OCPP16, OCPP201 = "ocpp1.6", "ocpp2.0.1"
PREFIX = {OCPP16: "G", OCPP201: "H"}  # the fleets' station ids: G00000..., H00000...
TARGET = 0.9  # a 2.0.1 figure against the 1.6 one of the same run
# The edge writes the message log (every frame, each station's last heartbeat) in a batch every second. A step
# timed right after another would pay for the other's batch: 500 stations' Heartbeat step leaves 5,000 frames,
# about 60 ms of CPU (100 ms and more of wall time) for SQLite to write, which landed in the 2.0.1 fleet's step
# timed next. Every step starts once the batches of the one before have been written.
SETTLE_SECONDS = 2.0
Frame = list[object]


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


def _boot_and_status(generation: str, n: int) -> list[Frame]:
    if generation == OCPP16:
        return [
            [2, f"b{n}", "BootNotification", {"chargePointVendor": "Bench", "chargePointModel": "Gen"}],
            [2, f"s{n}", "StatusNotification", {"connectorId": 1, "errorCode": "NoError", "status": "Available"}],
        ]
    status = {"timestamp": _now(), "connectorStatus": "Available", "evseId": 1, "connectorId": 1}
    return [
        [
            2,
            f"b{n}",
            "BootNotification",
            {"chargingStation": {"model": "Gen", "vendorName": "Bench"}, "reason": "PowerUp"},
        ],
        [2, f"s{n}", "StatusNotification", status],
    ]


def _energy_201(wh: int, context: str) -> list[dict[str, object]]:
    sampled = {"value": wh, "context": context, "measurand": "Energy.Active.Import.Register"}
    return [{"timestamp": _now(), "sampledValue": [sampled]}]


def _transaction_event(n: int, seq_no: int, event_type: str, **fields: object) -> Frame:
    payload = {
        "eventType": event_type,
        "timestamp": _now(),
        "triggerReason": "MeterValuePeriodic",
        "seqNo": seq_no,
        "transactionInfo": {"transactionId": f"T{n}"},
        **fields,
    }
    return [2, f"t{n}-{seq_no}", "TransactionEvent", payload]


class Fleet:
    """N stations of one generation holding their connections."""

    def __init__(self, url: str, generation: str) -> None:
        self.url = url
        self.generation = generation
        self.sockets: list[ClientConnection] = []
        self.answered = 0  # calls (or connections) of the latest step

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

    async def connect_all(self) -> float:
        semaphore = asyncio.Semaphore(200)

        async def limited(n: int) -> ClientConnection:
            async with semaphore:
                return await self._open(n)

        start = time.perf_counter()
        self.sockets = list(await asyncio.gather(*(limited(n) for n in range(STATIONS))))
        assert all(s.subprotocol == self.generation for s in self.sockets)
        self.answered = STATIONS
        return STATIONS / (time.perf_counter() - start)

    async def _each(self, station: Callable[[int, ClientConnection], Awaitable[int]]) -> float:
        """Every station runs `station` at once; calls answered per second."""
        start = time.perf_counter()
        calls = await asyncio.gather(*(station(n, s) for n, s in enumerate(self.sockets)))
        self.answered = sum(calls)
        return self.answered / (time.perf_counter() - start)

    async def sequences(self, make: Callable[[int], list[Frame]]) -> float:
        async def station(n: int, socket: ClientConnection) -> int:
            frames = make(n)
            for frame in frames:
                await _call(socket, frame)
            return len(frames)

        return await self._each(station)

    async def heartbeats(self) -> float:
        return await self.sequences(lambda n: [[2, f"h{n}-{r}", "Heartbeat", {}] for r in range(ROUNDS)])

    async def transactions(self) -> float:
        if self.generation == OCPP201:
            return await self.sequences(self._transaction_201)

        async def station(n: int, socket: ClientConnection) -> int:
            start = {"connectorId": 1, "idTag": f"TAG{n}", "meterStart": 0, "timestamp": _now()}
            transaction_id = (await _call(socket, [2, f"t{n}", "StartTransaction", start]))["transactionId"]
            for r in range(1, ROUNDS + 1):
                reading = {"timestamp": _now(), "sampledValue": [{"value": str(100 * r)}]}
                values = {"connectorId": 1, "transactionId": transaction_id, "meterValue": [reading]}
                await _call(socket, [2, f"m{n}-{r}", "MeterValues", values])
            stop = {"transactionId": transaction_id, "meterStop": 100 * (ROUNDS + 1), "timestamp": _now()}
            await _call(socket, [2, f"e{n}", "StopTransaction", stop])
            return ROUNDS + 2

        return await self._each(station)

    @staticmethod
    def _transaction_201(n: int) -> list[Frame]:
        token = {"idToken": f"TAG{n}", "type": "ISO14443"}
        started = _transaction_event(
            n,
            0,
            "Started",
            evse={"id": 1, "connectorId": 1},
            idToken=token,
            meterValue=_energy_201(0, "Transaction.Begin"),
        )
        updated = [
            _transaction_event(n, r, "Updated", meterValue=_energy_201(100 * r, "Sample.Periodic"))
            for r in range(1, ROUNDS + 1)
        ]
        ended = _transaction_event(
            n, ROUNDS + 1, "Ended", meterValue=_energy_201(100 * (ROUNDS + 1), "Transaction.End")
        )
        return [started, *updated, ended]

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.sockets), return_exceptions=True)


async def _call(socket: ClientConnection, frame: Frame) -> dict[str, object]:
    await socket.send(json.dumps(frame))
    answer = json.loads(await socket.recv())
    assert answer[0] == 3 and answer[1] == frame[1], (frame, answer)
    return dict(answer[2])


PATHS = ("connecting", "Boot + Status", "Heartbeat", "transaction stream")


def _cpu_seconds(pid: int) -> float:
    """The CPU time process `pid` has used, all its threads (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Figures:
    """What `_measure` found, by (generation, path): the rate, and the server's CPU time a call (or connection)
    took, counted until the next step starts, so with the batched writes it left, less what the server spends idle
    with both fleets connected over as long. The machine's other load slows the rates but hardly the CPU a call
    takes, so on a busy machine the CPU figures compare the generations better. (PostgreSQL's own CPU is not
    counted: it is another process.)"""

    def __init__(self) -> None:
        self.rates: dict[tuple[str, str], float] = {}
        self._used: dict[tuple[str, str], tuple[float, float, int]] = {}  # CPU seconds, wall seconds, calls
        self.idle = 0.0  # CPU seconds a second, nothing being asked

    def used(self, key: tuple[str, str], cpu: float, wall: float, calls: int) -> None:
        self._used[key] = (cpu, wall, calls)

    def cpu(self, generation: str, path: str) -> float:
        """CPU seconds a call."""
        cpu, wall, calls = self._used[generation, path]
        return max(cpu - self.idle * wall, 1e-7 * calls) / calls  # never 0: ratios divide by it


async def _measure(url: str, server_pid: int) -> Figures:
    """Each path measured for the 1.6 fleet, then the 2.0.1 one."""
    fleets = {generation: Fleet(url, generation) for generation in (OCPP16, OCPP201)}
    figures = Figures()

    async def timed(path: str, fleet: Fleet, step: Callable[[], Awaitable[float]]) -> None:
        cpu, start = _cpu_seconds(server_pid), time.perf_counter()
        figures.rates[fleet.generation, path] = await step()
        await asyncio.sleep(SETTLE_SECONDS)
        used = _cpu_seconds(server_pid) - cpu
        figures.used((fleet.generation, path), used, time.perf_counter() - start, fleet.answered)

    try:
        for fleet in fleets.values():
            await timed("connecting", fleet, fleet.connect_all)
        cpu, start = _cpu_seconds(server_pid), time.perf_counter()
        await asyncio.sleep(2 * SETTLE_SECONDS)
        figures.idle = (_cpu_seconds(server_pid) - cpu) / (time.perf_counter() - start)
        steps: list[tuple[str, Callable[[Fleet], Awaitable[float]]]] = [
            ("Boot + Status", lambda fleet: fleet.sequences(lambda n: _boot_and_status(fleet.generation, n))),
            ("Heartbeat", Fleet.heartbeats),
            ("transaction stream", Fleet.transactions),
        ]
        for path, step in steps:
            for fleet in fleets.values():
                await timed(path, fleet, functools.partial(step, fleet))
    finally:
        for fleet in fleets.values():
            await fleet.close()
    return figures


def run() -> list[Result]:
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
    store = "PostgreSQL" if database_url else "SQLite"
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "data"
        base_port, edge_port = _free_port(), _free_port()
        asyncio.run(_prepare_store(data, database_url))
        baseline = _start(["-m", "bench.ocpp_baseline", str(base_port), PASSWORD], base_port)
        try:
            theirs = asyncio.run(_measure(f"ws://127.0.0.1:{base_port}/ocpp", baseline.pid))
        finally:
            baseline.kill()
            baseline.wait()
        serve = ["-m", "chargenet", "serve", "--port", str(edge_port), "--data-dir", str(data), "--log-level", "error"]
        if database_url:
            serve += ["--database-url", database_url]
        edge = _start(serve, edge_port)
        try:
            ours = asyncio.run(_measure(f"ws://127.0.0.1:{edge_port}/ocpp", edge.pid))
        finally:
            edge.terminate()
            edge.wait()
    n = f"{STATIONS} stations per generation, {store}"
    unit = {"connecting": "connections/s"}
    results = [
        Result(
            f"edge {label} {path} ({n})",
            ours.rates[generation, path],
            theirs.rates[generation, path],
            unit.get(path, "calls/s"),
        )
        for path in PATHS
        for generation, label in ((OCPP16, "1.6"), (OCPP201, "2.0.1"))
    ]
    # The generations' figures, each as a ratio to the bare responder speaking the same generation: 2.0.1's
    # frames are larger and its schemas richer, which costs the bare responder too.
    results += [
        Result(
            f"edge 2.0.1 {path}, its ratio to the bare responder against 1.6's ({n})",
            ours.rates[OCPP201, path] / theirs.rates[OCPP201, path],
            ours.rates[OCPP16, path] / theirs.rates[OCPP16, path],
            "x bare",
            target=TARGET,
        )
        for path in PATHS
    ]
    # The same comparison in calls per CPU second of the server, which the machine's other load leaves alone.
    results += [
        Result(
            f"edge 2.0.1 {path}, its ratio to the bare responder against 1.6's, by CPU time ({n})",
            theirs.cpu(OCPP201, path) / ours.cpu(OCPP201, path),
            theirs.cpu(OCPP16, path) / ours.cpu(OCPP16, path),
            "x bare",
        )
        for path in PATHS
    ]
    results += [
        Result(
            f"edge {label} {path}, CPU time a call ({n})",
            ours.cpu(generation, path) * 1e6,
            theirs.cpu(generation, path) * 1e6,
            "us",
        )
        for path in PATHS
        for generation, label in ((OCPP16, "1.6"), (OCPP201, "2.0.1"))
    ]
    return results
