"""The edge under load, against a bare `websockets` OCPP responder measured in the same run on the same machine.

Both servers run as their own process on loopback; the load generator (simulated stations speaking raw OCPP-J)
runs in this process. Measured: handshakes per second for N stations connecting at once (Basic auth), server
memory per connection (RSS growth / N, read from /proc), and round trips per second for Heartbeat and for
StatusNotification (which, at the edge, stores the status and publishes a ChargePointStatus event per change).

Then a reconnect storm: every station drops its connection (TCP reset, as in a network outage) and reconnects,
the reconnects spread evenly over a window at the issue's rate (10,000 stations within 60 s, so N * 6 ms;
`CHARGENET_BENCH_STORM_SECONDS` overrides it), each sending BootNotification and a StatusNotification for
connector 0 and connector 1. Checked: every CALL got a CALLRESULT, and at the edge the ChargePointStatus events
stored for the storm are exactly the status changes it reported (none lost, none twice), read from the store
after the edge has stopped. Measured: time to settle, from the first reconnect to the last answer.

`CHARGENET_BENCH_STATIONS` sets N (default 1000; the issue's target is 10,000). The edge runs on the embedded
SQLite, then on a fresh database of the PostgreSQL server `make bench` starts (or the one
`CHARGENET_BENCH_POSTGRES=postgresql+asyncpg://user:pw@host/db` names), created for the run and dropped after.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import func, select
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from bench.common import POSTGRES_SERVER, Result, create_database, drop_database
from chargenet.app import open_context
from chargenet.config import load_settings
from chargenet.services import companies, sites, stations
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import OutboxEvent

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "0123456789abcdef0123"
STATIONS = int(os.environ.get("CHARGENET_BENCH_STATIONS", "1000"))
PROXIED = 50  # stations behind the upstream proxy for the latency figure
PROXY_RATE = 500.0  # messages per second across them
PROXY_SECONDS = 5.0
ROUNDS = int(os.environ.get("CHARGENET_BENCH_ROUNDS", "5"))
STORM_SECONDS = float(os.environ.get("CHARGENET_BENCH_STORM_SECONDS", STATIONS * 60 / 10_000))
STORM_TIMEOUT = 300.0  # seconds a station waits for its handshake, or a storm station for all its answers

EventKey = tuple[str, int, str]  # station id, connector id, status


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user and system), read from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _store_flags(data_dir: Path, database_url: str | None) -> dict[str, str]:
    flags = {"data_dir": str(data_dir)}
    if database_url:
        flags["database_url"] = database_url
    return flags


async def _prepare_store(data_dir: Path, database_url: str | None, upstream_url: str) -> None:
    context = await open_context(load_settings(_store_flags(data_dir, database_url), {}))
    try:
        hasher, cipher = context.keys.secret_hasher(), context.keys.credential_cipher()
        async with context.store.transaction() as session:
            company = await companies.create_company(session, OPERATOR, name="Bench", now=context.clock.now())
            site = await sites.create_site(
                session, OPERATOR, cipher, company_id=company.id, name="Bench", now=context.clock.now()
            )
            for n in range(STATIONS):
                await stations.create_station(
                    session,
                    OPERATOR,
                    hasher,
                    cipher,
                    site_id=site.id,
                    station_id=f"B{n:05d}",
                    now=context.clock.now(),
                    password=PASSWORD,
                )
            proxied = await sites.create_site(
                session,
                OPERATOR,
                cipher,
                company_id=company.id,
                name="Proxied",
                now=context.clock.now(),
                upstream_url=upstream_url,
            )
            for n in range(PROXIED):
                await stations.create_station(
                    session,
                    OPERATOR,
                    hasher,
                    cipher,
                    site_id=proxied.id,
                    station_id=f"P{n:05d}",
                    now=context.clock.now(),
                )
    finally:
        await context.close()


def _start(args: list[str], port: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"server on port {port} did not start")


class Fleet:
    def __init__(self, url: str) -> None:
        self.url = url
        self.sockets: list[ClientConnection] = []
        self._ids = 0

    async def _open(self, n: int) -> ClientConnection:
        station_id = f"B{n:05d}"
        token = base64.b64encode(f"{station_id}:{PASSWORD}".encode()).decode()
        return await connect(
            f"{self.url}/{station_id}",
            subprotocols=[Subprotocol("ocpp1.6")],
            additional_headers={"Authorization": f"Basic {token}"},
            open_timeout=STORM_TIMEOUT,
            ping_interval=None,
        )

    async def connect_all(self) -> float:
        start = time.perf_counter()
        semaphore = asyncio.Semaphore(200)

        async def limited(n: int) -> ClientConnection:
            async with semaphore:
                return await self._open(n)

        self.sockets = list(await asyncio.gather(*(limited(n) for n in range(STATIONS))))
        return STATIONS / (time.perf_counter() - start)

    async def round_trips(self, make: Callable[[int, int], list[object]]) -> float:
        async def station(n: int, socket: ClientConnection) -> None:
            for r in range(ROUNDS):
                await socket.send(json.dumps(make(n, r)))
                answer = json.loads(await socket.recv())
                assert answer[0] == 3, answer

        start = time.perf_counter()
        await asyncio.gather(*(station(n, s) for n, s in enumerate(self.sockets)))
        return STATIONS * ROUNDS / (time.perf_counter() - start)

    async def storm(self) -> Storm:
        """Drop every connection at once, then reconnect station n at `STORM_SECONDS * n / STATIONS` after the
        first, each sending `_storm_calls(n)` one after the other."""
        for connection in self.sockets:
            connection.transport.abort()
        await asyncio.sleep(1)  # let the server see the resets before the first reconnect
        outcome = Storm()
        sockets: list[ClientConnection | None] = [None] * STATIONS
        first = time.perf_counter()

        async def station(n: int) -> None:
            await asyncio.sleep(max(0.0, first + STORM_SECONDS * n / STATIONS - time.perf_counter()))
            start = time.perf_counter()
            try:
                async with asyncio.timeout(STORM_TIMEOUT):
                    sockets[n] = socket = await self._open(n)
                    for call in _storm_calls(n):
                        outcome.calls += 1
                        await socket.send(json.dumps(call))
                        answer = json.loads(await socket.recv())
                        if answer[0] == 3 and answer[1] == call[1]:
                            outcome.answered += 1
                        else:
                            outcome.failures[f"{call[2]} answered {answer[0]}"] += 1
            except Exception as exc:
                outcome.failures[type(exc).__name__] += 1
            end = time.perf_counter()
            outcome.last_answer = max(outcome.last_answer, end)
            outcome.per_station.append((end - start) * 1000)

        await asyncio.gather(*(station(n) for n in range(STATIONS)))
        outcome.settle = outcome.last_answer - first
        outcome.per_station.sort()
        self.sockets = [s for s in sockets if s is not None]
        return outcome

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.sockets), return_exceptions=True)


@dataclass
class Storm:
    calls: int = 0  # CALLs sent (a station whose handshake failed sends none)
    answered: int = 0  # CALLRESULTs to them
    failures: Counter[str] = field(default_factory=Counter)
    last_answer: float = 0.0
    settle: float = 0.0  # seconds from the first reconnect to the last answer
    per_station: list[float] = field(default_factory=list)  # ms from a station's reconnect to its last answer

    @property
    def planned(self) -> int:
        return STATIONS * len(_storm_calls(0))


async def _latencies(url: str) -> list[float]:
    """Heartbeats from `PROXIED` stations at `PROXY_RATE` in total; every round trip's time in ms."""
    sockets = [
        await connect(f"{url}/P{n:05d}", subprotocols=[Subprotocol("ocpp1.6")], ping_interval=None)
        for n in range(PROXIED)
    ]
    await asyncio.sleep(0.5)
    times: list[float] = []
    interval = PROXIED / PROXY_RATE

    async def station(n: int, socket: ClientConnection) -> None:
        await asyncio.sleep(interval * n / PROXIED)
        deadline = time.perf_counter() + PROXY_SECONDS
        r = 0
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            await socket.send(json.dumps([2, f"l{n}-{r}", "Heartbeat", {}]))
            await socket.recv()
            times.append((time.perf_counter() - start) * 1000)
            r += 1
            await asyncio.sleep(max(0.0, interval - (time.perf_counter() - start)))

    await asyncio.gather(*(station(n, s) for n, s in enumerate(sockets)))
    await asyncio.gather(*(s.close() for s in sockets))
    return sorted(times)


def _percentile(values: list[float], fraction: float) -> float:
    return values[min(len(values) - 1, int(len(values) * fraction))]


def _heartbeat(n: int, r: int) -> list[object]:
    return [2, f"h{n}-{r}", "Heartbeat", {}]


def _status_name(r: int) -> str:
    return "Available" if r % 2 == 0 else "Preparing"


def _connector_status(connector: int, status: str) -> dict[str, object]:
    return {"connectorId": connector, "errorCode": "NoError", "status": status}


def _status(n: int, r: int) -> list[object]:
    return [2, f"s{n}-{r}", "StatusNotification", _connector_status(1, _status_name(r))]


def _storm_calls(n: int) -> list[list[object]]:
    """What station n sends after reconnecting: BootNotification, then connector 0 (the charge point) Available
    and connector 1 with the next status of the `_status` rounds."""
    return [
        [2, f"b{n}", "BootNotification", {"chargePointVendor": "Bench", "chargePointModel": "Storm"}],
        [2, f"c{n}-0", "StatusNotification", _connector_status(0, "Available")],
        [2, f"c{n}-1", "StatusNotification", _connector_status(1, _status_name(ROUNDS))],
    ]


def _storm_expected_events() -> Counter[EventKey]:
    """The ChargePointStatus events the storm must raise: one per reported status that differs from the
    connector's last known one. Before the storm connector 1 last reported `_status` round ROUNDS - 1 (every round
    was answered) and connector 0 never reported (its first report always raises one)."""
    expected: Counter[EventKey] = Counter()
    for n in range(STATIONS):
        last: dict[int, str] = {1: _status_name(ROUNDS - 1)}
        for call in _storm_calls(n):
            if call[2] != "StatusNotification":
                continue
            payload = call[3]
            assert isinstance(payload, dict)
            connector, status = int(payload["connectorId"]), str(payload["status"])
            if last.get(connector) != status:
                expected[(f"B{n:05d}", connector, status)] += 1
            last[connector] = status
    return expected


async def _last_event_position(store_url: str) -> int:
    store = Store(store_url)
    try:
        async with store.transaction() as session:
            return int(await session.scalar(select(func.coalesce(func.max(OutboxEvent.position), 0))) or 0)
    finally:
        await store.dispose()


async def _status_events_after(store_url: str, position: int) -> Counter[EventKey]:
    store = Store(store_url)
    try:
        async with store.transaction() as session:
            bodies = await session.scalars(
                select(OutboxEvent.body).where(
                    OutboxEvent.position > position, OutboxEvent.event_type == "ChargePointStatus"
                )
            )
            found: Counter[EventKey] = Counter()
            for body in bodies:
                payload = json.loads(body)["payload"]
                found[(payload["stationId"], payload["connectorId"], payload["status"])] += 1
            return found
    finally:
        await store.dispose()


async def _measure(url: str, pid: int, store_url: str | None = None) -> tuple[dict[str, float], Storm, int]:
    """The figures, the storm, and (with `store_url`) the last event position in the store before the storm."""
    before = _rss_kib(pid)
    fleet = Fleet(url)
    figures = {"connect": await fleet.connect_all()}
    await asyncio.sleep(1)
    figures["kib_per_connection"] = (_rss_kib(pid) - before) / STATIONS
    for step, make in (("heartbeat", _heartbeat), ("status", _status)):
        cpu = _cpu_seconds(pid)
        figures[step] = await fleet.round_trips(make)
        figures[f"{step}_cpu_us"] = (_cpu_seconds(pid) - cpu) * 1e6 / (STATIONS * ROUNDS)
    position = await _last_event_position(store_url) if store_url else 0
    storm = await fleet.storm()
    await fleet.close()
    return figures, storm, position


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
        base_port, edge_port, cpo_port = _free_port(), _free_port(), _free_port()
        asyncio.run(_prepare_store(data, database_url, f"ws://127.0.0.1:{cpo_port}/ocpp"))
        store_url = load_settings(_store_flags(data, database_url), {}).database_url
        baseline = _start(["-m", "bench.ocpp_baseline", str(base_port), PASSWORD], base_port)
        try:
            theirs, their_storm, _ = asyncio.run(_measure(f"ws://127.0.0.1:{base_port}/ocpp", baseline.pid))
        finally:
            baseline.kill()
            baseline.wait()
        serve = ["-m", "chargenet", "serve", "--port", str(edge_port), "--data-dir", str(data), "--log-level", "error"]
        if database_url:
            serve += ["--database-url", database_url]
        edge = _start(serve, edge_port)
        cpo = _start(["-m", "chargenet.simulators.cpo", "--port", str(cpo_port)], cpo_port)
        try:
            ours, our_storm, position = asyncio.run(_measure(f"ws://127.0.0.1:{edge_port}/ocpp", edge.pid, store_url))
            direct = asyncio.run(_latencies(f"ws://127.0.0.1:{cpo_port}/ocpp"))
            proxied = asyncio.run(_latencies(f"ws://127.0.0.1:{edge_port}/ocpp"))
        finally:
            edge.terminate()
            edge.wait()
            cpo.kill()
            cpo.wait()
        # Read once the edge has stopped: whatever it was still to write is in, so a late duplicate shows too.
        found = asyncio.run(_status_events_after(store_url, position))
    n = f"{STATIONS} stations, {store}"
    added = {q: _percentile(proxied, q) - _percentile(direct, q) for q in (0.5, 0.99)}
    print(
        f"proxy latency at {PROXY_RATE:.0f} msg/s ({PROXIED} stations, {store}): direct p50 "
        f"{_percentile(direct, 0.5):.2f} ms p99 {_percentile(direct, 0.99):.2f} ms; through the edge p50 "
        f"{_percentile(proxied, 0.5):.2f} ms p99 {_percentile(proxied, 0.99):.2f} ms; added p50 {added[0.5]:.2f} ms "
        f"p99 {added[0.99]:.2f} ms (target: p99 added < 5 ms)",
        flush=True,
    )
    expected = _storm_expected_events()
    lost = sum((expected - found).values())
    duplicated = sum((found - expected).values())
    print(
        f"reconnect storm ({STATIONS} stations over {STORM_SECONDS:g} s, {store}): edge {our_storm.answered}/"
        f"{our_storm.planned} CALLs answered, settled in {our_storm.settle:.2f} s, per station p50 "
        f"{_percentile(our_storm.per_station, 0.5):.0f} ms p99 {_percentile(our_storm.per_station, 0.99):.0f} ms; "
        f"bare {their_storm.answered}/{their_storm.planned} answered, settled in {their_storm.settle:.2f} s, per "
        f"station p50 {_percentile(their_storm.per_station, 0.5):.0f} ms p99 "
        f"{_percentile(their_storm.per_station, 0.99):.0f} ms; ChargePointStatus events expected "
        f"{sum(expected.values())}, stored {sum(found.values())}, lost {lost}, duplicated {duplicated}",
        flush=True,
    )
    problems = [
        f"{who} answered {s.answered} of {s.planned} CALLs ({dict(s.failures)})"
        for who, s in (("edge", our_storm), ("bare responder", their_storm))
        if s.answered != s.planned
    ]
    if lost or duplicated:
        problems.append(f"{lost} ChargePointStatus events lost, {duplicated} duplicated")
    return [
        Result(
            f"edge handshakes with Basic auth ({n})", ours["connect"], theirs["connect"], "connections/s", target=0.5
        ),
        Result(
            f"edge connections per MiB of server memory ({n}; ours {ours['kib_per_connection']:.0f} KiB each, "
            f"bare {theirs['kib_per_connection']:.0f} KiB)",
            1024 / max(ours["kib_per_connection"], 0.1),
            1024 / max(theirs["kib_per_connection"], 0.1),
            "connections/MiB",
            target=1 / 1.5,
        ),
        Result(
            f"edge Heartbeat round trips ({n}; server CPU a call: ours {ours['heartbeat_cpu_us']:.0f} us, bare "
            f"{theirs['heartbeat_cpu_us']:.0f} us)",
            ours["heartbeat"],
            theirs["heartbeat"],
            "calls/s",
            target=0.95,
        ),
        Result(
            f"edge StatusNotification round trips with events ({n}; server CPU a call: ours "
            f"{ours['status_cpu_us']:.0f} us, bare {theirs['status_cpu_us']:.0f} us)",
            ours["status"],
            theirs["status"],
            "calls/s",
            target=0.5,
        ),
        Result(
            f"edge reconnect storm settled, Boot + 2 StatusNotification each ({n}, reconnects spread over "
            f"{STORM_SECONDS:g} s; ours settled in {our_storm.settle:.2f} s, bare {their_storm.settle:.2f} s)",
            STATIONS / our_storm.settle,
            STATIONS / their_storm.settle,
            "stations/s",
            failure="; ".join(problems),
        ),
    ]
