"""Webhook delivery: signed deliveries per second through the lanes (1 lane, 100 lanes) and enqueue-to-delivery
latency at a steady 500 events/s, each against a bare httpx POST loop to the same local receiver in the same run.
The receiver is a process of its own (bench/webhook_receiver.py), as a partner's would be.

Targets: with ed25519, at least 60% of the bare loop's rate; p99 latency under 50 ms. Each on the embedded SQLite
(WAL, synchronous=FULL, so every acknowledged delivery is on disk before the next one), then on a fresh database
of the PostgreSQL server `make bench` starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx

from bench.common import POSTGRES_SERVER, Result, create_database, drop_database
from chargenet.app import AppContext, open_context
from chargenet.collector import freeze_startup_heap, tune_for_serving
from chargenet.config import load_settings
from chargenet.domain.events import AuthorizePayload
from chargenet.edge.committer import GroupCommitter
from chargenet.services import companies, sites
from chargenet.services.callers import OPERATOR
from chargenet.webhooks.engine import DeliveryEngine
from chargenet.webhooks.install import install as install_webhooks
from chargenet.webhooks.transport import GuardedTransport
from tests.factories import add_webhook

SINGLE_LANE_EVENTS = 900
MANY_LANES = 100
MANY_LANES_EVENTS = 10
LATENCY_RATE = 500
LATENCY_SECONDS = 3.0
WARM_UP_SECONDS = 0.2
PAYLOAD = AuthorizePayload.model_validate({"stationId": "ST-1", "idTag": "TAG", "status": "Accepted"})


class Receiver:
    """The receiver process (bench/webhook_receiver.py), noting when each request arrived, and when each event
    marked in its `payload.info` did."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.marked: dict[str, float] = {}
        self.port = 0
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.webhook_receiver", stdout=asyncio.subprocess.PIPE
        )
        assert self._process.stdout is not None
        self.port = int(await self._process.stdout.readline())
        self._reader = asyncio.create_task(self._read(self._process.stdout))

    async def _read(self, stdout: asyncio.StreamReader) -> None:
        while line := await stdout.readline():
            at, _, mark = line.decode().strip().partition(" ")
            self.arrivals.append(float(at))
            if mark:
                self.marked[mark] = float(at)

    async def stop(self) -> None:
        assert self._process is not None and self._reader is not None
        self._process.kill()
        await self._process.wait()
        self._reader.cancel()


async def _until(condition: Callable[[], bool], limit: float = 120.0) -> None:
    deadline = time.perf_counter() + limit
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("deliveries did not finish")
        await asyncio.sleep(0.002)


async def _context(scratch: Path, database_url: str | None) -> tuple[AppContext, str]:
    settings = load_settings(
        {
            "data_dir": str(scratch),
            "webhook_allow_private": True,
            "database_url": database_url or f"sqlite:///{scratch / 'b.db'}",
        },
        environ={},
    )
    context = await open_context(settings)
    freeze_startup_heap()  # as `chargenet serve` does once it is set up
    async with context.store.transaction() as session:
        company = await companies.create_company(session, OPERATOR, name="Bench", now=context.clock.now())
        site = await sites.create_site(
            session,
            OPERATOR,
            context.keys.credential_cipher(),
            company_id=company.id,
            name="Bench",
            now=context.clock.now(),
        )
    return context, site.id


async def _webhooks(context: AppContext, site_id: str, url: str, count: int) -> None:
    for _ in range(count):
        await add_webhook(
            context.store.transaction, context.keys.credential_cipher(), site_id, context.clock.now(), url=url
        )


async def _publish(context: AppContext, site_id: str, count: int) -> None:
    async with context.store.transaction() as session:
        for _ in range(count):
            await context.outbox.publish(session, site_id=site_id, payload=PAYLOAD)


async def _bare_rate(
    url: str, body: bytes, loops: int, per_loop: int, transport: httpx.AsyncBaseTransport | None = None
) -> float:
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=loops), transport=transport) as client:

        async def loop() -> None:
            for _ in range(per_loop):
                response = await client.post(url, content=body, headers={"Content-Type": "application/json"})
                assert response.status_code == 204

        start = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(loops)))
        return loops * per_loop / (time.perf_counter() - start)


async def _run_engine(context: AppContext) -> tuple[DeliveryEngine, asyncio.Event, asyncio.Task[None]]:
    engine = install_webhooks(context, lease_interval=0.5)
    stopping = asyncio.Event()
    task = asyncio.create_task(engine.run(stopping))
    return engine, stopping, task


async def _throughput(lanes: int, events: int, server_url: str | None) -> list[Result]:
    receiver = Receiver()
    await receiver.start()
    url = f"http://127.0.0.1:{receiver.port}/hook"
    async with _scratch(server_url) as (scratch, database_url):
        context, site_id = await _context(Path(scratch), database_url)
        await _webhooks(context, site_id, url, lanes)
        body = (PAYLOAD.model_dump_json()).encode()
        baseline = await _bare_rate(url, body, lanes, events)
        # For the record, not the target: the same loop over the webhooks' own transport (asyncio's sockets under
        # httpcore, where httpx's default runs on anyio's), to tell what the lanes cost from what the transport saves.
        same_transport = await _bare_rate(
            url, body, lanes, events, GuardedTransport(allow_private=True, max_connections=lanes)
        )
        receiver.arrivals.clear()
        _engine, stopping, task = await _run_engine(context)
        await asyncio.sleep(0.6)  # leases taken, lane tasks idle
        # One event a lane first, as the baseline's client is made before its clock starts: the connection
        # pool, the TLS context and the signing keys are set up once per process, not per delivery.
        await _publish(context, site_id, 1)
        await _until(lambda: len(receiver.arrivals) >= lanes)
        receiver.arrivals.clear()
        await _publish(context, site_id, events)
        start = time.perf_counter()
        await _until(lambda: len(receiver.arrivals) >= lanes * events)
        ours = lanes * events / (time.perf_counter() - start)
        stopping.set()
        await task
        await context.close()
    await receiver.stop()
    name = f"signed ed25519 deliveries, {lanes} lane{'s' if lanes > 1 else ''} ({_store_name(server_url)})"
    return [
        Result(name, ours, baseline, "deliveries/s", target=0.6),
        Result(f"{name} vs a bare loop on the webhooks' transport", ours, same_transport, "deliveries/s"),
    ]


async def _steady(
    send: Callable[[int], Awaitable[None]], arrivals: list[float], per_second: int, seconds: float = LATENCY_SECONDS
) -> tuple[list[float], float]:
    """Send at `per_second` for `seconds`; latencies in ms from each send to its arrival, and the rate
    achieved (a publisher that waits for its commit cannot go faster than the store lets it).

    At most 900 events, so a lane slower than the rate backs up but never overflows its 1000 places."""
    sent: list[float] = []
    interval = 1 / per_second
    start = time.perf_counter()
    for n in range(min(900, max(2, int(per_second * seconds)))):
        target = start + n * interval
        await asyncio.sleep(max(0.0, target - time.perf_counter()))
        sent.append(time.perf_counter())
        await send(n)
    await _until(lambda: len(arrivals) >= len(sent))
    achieved = (len(sent) - 1) / (sent[-1] - sent[0])
    return [(arrival - at) * 1000 for at, arrival in zip(sent, arrivals, strict=False)], achieved


async def _warm_up(send: Callable[[int], Awaitable[None]], arrivals: list[float], per_second: int) -> None:
    """Send at `per_second` for WARM_UP_SECONDS, unmeasured, and wait for every arrival: what a process sets up once
    (connections in its pools, statements prepared on them, the TLS context, the signing keys) is set up before
    the measured window, for the baseline and for us alike, as in a service that has been running."""
    await _steady(send, arrivals, per_second, seconds=WARM_UP_SECONDS)
    arrivals.clear()


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1]


async def _latency(per_second: int, server_url: str | None) -> list[Result]:
    receiver = Receiver()
    await receiver.start()
    url = f"http://127.0.0.1:{receiver.port}/hook"
    body = PAYLOAD.model_dump_json().encode()
    async with httpx.AsyncClient() as client:
        pending: set[asyncio.Task[httpx.Response]] = set()

        async def bare(_: int) -> None:
            task = asyncio.create_task(client.post(url, content=body))
            pending.add(task)
            task.add_done_callback(pending.discard)

        await _warm_up(bare, receiver.arrivals, per_second)
        bare_ms, _ = await _steady(bare, receiver.arrivals, per_second)
    receiver.arrivals.clear()
    async with _scratch(server_url) as (scratch, database_url):
        context, site_id = await _context(Path(scratch), database_url)
        await _webhooks(context, site_id, url, 1)
        _engine, stopping, task = await _run_engine(context)
        await asyncio.sleep(0.6)

        publishing: set[asyncio.Task[None]] = set()
        committed: list[float] = []

        committer = GroupCommitter(context.store)

        async def publish_one() -> None:
            async with committer.unit() as session:
                await context.outbox.publish(session, site_id=site_id, payload=PAYLOAD)
            committed.append(time.perf_counter())

        async def publish(_: int) -> None:
            # Each event from its own producer, committed as the edge commits stations' events (group commit).
            task = asyncio.create_task(publish_one())
            publishing.add(task)
            task.add_done_callback(publishing.discard)

        await _warm_up(publish, receiver.arrivals, per_second)
        committed.clear()
        ours_ms, _ = await _steady(publish, receiver.arrivals, per_second)
        await committer.close()
        achieved = (len(committed) - 1) / (committed[-1] - committed[0])
        stopping.set()
        await task
        await context.close()
    await receiver.stop()
    rate = f"1 lane, {per_second} events/s asked, {achieved:.0f} committed, {_store_name(server_url)}"
    return [
        Result(f"enqueue-to-delivery p50, {rate} (ms)", _p(ours_ms, 50), _p(bare_ms, 50), "ms"),
        Result(f"enqueue-to-delivery p99, {rate} (ms)", _p(ours_ms, 99), _p(bare_ms, 99), "ms"),
    ]


def _store_name(server_url: str | None) -> str:
    return "PostgreSQL" if server_url else "SQLite"


@contextlib.asynccontextmanager
async def _scratch(server_url: str | None) -> AsyncIterator[tuple[str, str | None]]:
    """A folder for one measurement, and a fresh database on the PostgreSQL server for it (None: the measurement
    keeps its store in the folder, on SQLite)."""
    with tempfile.TemporaryDirectory() as scratch:
        if server_url is None:
            yield scratch, None
            return
        database_url = await create_database(server_url)
        try:
            yield scratch, database_url
        finally:
            await drop_database(server_url, database_url)


async def _measure(server_url: str | None) -> list[Result]:
    return [
        *await _throughput(1, SINGLE_LANE_EVENTS, server_url),
        *await _throughput(MANY_LANES, MANY_LANES_EVENTS, server_url),
        *await _latency(100, server_url),
        *await _latency(LATENCY_RATE, server_url),
    ]


def run() -> list[Result]:
    # This process stands in for `chargenet serve`: its collector settings, and the heap frozen before the first
    # measurement (the baseline's included) as well as once each measurement's service is set up.
    tune_for_serving()
    freeze_startup_heap()
    results = asyncio.run(_measure(None))
    server_url = os.environ.get(POSTGRES_SERVER)
    if server_url:
        results += asyncio.run(_measure(server_url))
    return results
