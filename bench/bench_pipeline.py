"""A station's status to the partner, end to end: StatusNotifications from stations connected to `chargenet serve`,
through the edge (decision, write and event), the filler, one site's lane and its acknowledgements, to a receiver
process; against the one-lane bench (`bench_webhooks`: events published straight into the outbox, one lane, in
process) in the same run.

STATIONS stations of one site with two connectors each (200 connectors) each send ROUNDS status changes of each
connector, one frame after the other's answer. The rate is the events delivered from the first frame to the last
event's arrival. Targets: at least 600 events/s on SQLite, and at least 0.8 of the one-lane bench's rate.

Then, on the same server, a paced phase: the stations send PACED_RATE status changes a second in all, each station on
its own schedule (station n's k-th frame at n + k * STATIONS slots of 1 / PACED_RATE s after the start), for
PACED_SECONDS. Each frame carries a mark in its `info`, which the event and so the webhook carry, and the receiver
notes when each mark arrived: the latency is from the frame's send to its event's arrival at the partner. Target: a
p99 under 100 ms. CHARGENET_BENCH_PIPELINE_RATE sets another rate, to see the latency below saturation.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from bench import bench_webhooks
from bench.bench_edge import _free_port, _start, _store_flags
from bench.common import POSTGRES_SERVER, Result, create_database, drop_database
from chargenet.app import open_context
from chargenet.config import load_settings
from chargenet.domain.events import EventType
from chargenet.services import companies, sites, stations
from chargenet.services.callers import OPERATOR
from tests.factories import add_webhook

STATIONS = 100
CONNECTORS = 2
# 800 events: like the one-lane bench's 900, fewer than a lane holds (1,000), so none is refused however far the lane
# falls behind the stations.
ROUNDS = int(os.environ.get("CHARGENET_BENCH_PIPELINE_ROUNDS", "4"))
PASSWORD = "0123456789abcdef0123"
RATE_TARGET = 600.0  # events/s on SQLite
RATIO_TARGET = 0.8  # of the one-lane bench
ARRIVAL_TIMEOUT = 120.0
PACED_RATE = int(os.environ.get("CHARGENET_BENCH_PIPELINE_RATE", "300"))  # events/s, all stations together
PACED_SECONDS = 3.0  # 900 events: fewer than a lane holds, however far it falls behind
P99_TARGET_MS = 100.0


async def _prepare_store(data_dir: Path, database_url: str | None, receiver_url: str) -> None:
    context = await open_context(
        load_settings({**_store_flags(data_dir, database_url), "webhook_allow_private": True}, {})
    )
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
                    station_id=f"F{n:03d}",
                    now=context.clock.now(),
                    password=PASSWORD,
                    connectors=CONNECTORS,
                )
        await add_webhook(
            context.store.transaction,
            cipher,
            site.id,
            context.clock.now(),
            url=receiver_url,
            event_types=[EventType.CHARGE_POINT_STATUS.value],
        )
    finally:
        await context.close()


async def _open(url: str, n: int) -> ClientConnection:
    station_id = f"F{n:03d}"
    token = base64.b64encode(f"{station_id}:{PASSWORD}".encode()).decode()
    return await connect(
        f"{url}/{station_id}",
        subprotocols=[Subprotocol("ocpp1.6")],
        additional_headers={"Authorization": f"Basic {token}"},
        ping_interval=None,
    )


def _status(n: int, r: int, connector: int, mark: str | None = None) -> list[object]:
    # Every frame changes its connector's status, so every frame makes an event.
    status = "Charging" if r % 2 == 0 else "Available"
    payload: dict[str, object] = {"connectorId": connector, "errorCode": "NoError", "status": status}
    if mark is not None:
        payload["info"] = mark
    return [2, f"p{n}-{r}-{connector}", "StatusNotification", payload]


async def _pipeline(url: str, receiver: bench_webhooks.Receiver) -> float:
    """Events per second from the first frame to the last event's arrival at the receiver."""
    sockets = await asyncio.gather(*(_open(url, n) for n in range(STATIONS)))
    expected = STATIONS * ROUNDS * CONNECTORS
    receiver.arrivals.clear()

    async def station(n: int, socket: ClientConnection) -> None:
        for r in range(ROUNDS):
            for connector in range(1, CONNECTORS + 1):
                await socket.send(json.dumps(_status(n, r, connector)))
                answer = json.loads(await socket.recv())
                assert answer[0] == 3, answer

    start = time.perf_counter()
    try:
        await asyncio.gather(*(station(n, s) for n, s in enumerate(sockets)))
        deadline = time.perf_counter() + ARRIVAL_TIMEOUT
        while len(receiver.arrivals) < expected:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{len(receiver.arrivals)} of {expected} events reached the receiver")
            await asyncio.sleep(0.01)
    finally:
        await asyncio.gather(*(s.close() for s in sockets), return_exceptions=True)
    return expected / (max(receiver.arrivals[:expected]) - start)


async def _paced(url: str, receiver: bench_webhooks.Receiver) -> tuple[float, float, float]:
    """Frame-to-partner latencies at PACED_RATE: p50 and p99 in ms, and the rate the stations achieved. Rounds go on
    from where `_pipeline` left them, so every frame still changes its connector's status."""
    sockets = await asyncio.gather(*(_open(url, n) for n in range(STATIONS)))
    frames = int(PACED_RATE * PACED_SECONDS) // STATIONS  # each station's
    slot = 1 / PACED_RATE
    sent: dict[str, float] = {}
    receiver.marked.clear()

    async def station(n: int, socket: ClientConnection, start: float) -> None:
        for k in range(frames):
            # Connectors in turn, each a new round: frame k is connector k % 2 + 1 in round ROUNDS + k // 2.
            connector, r = k % CONNECTORS + 1, ROUNDS + k // CONNECTORS
            await asyncio.sleep(max(0.0, start + (n + k * STATIONS) * slot - time.perf_counter()))
            mark = f"{n}-{r}-{connector}"
            sent[mark] = time.perf_counter()
            await socket.send(json.dumps(_status(n, r, connector, mark)))
            answer = json.loads(await socket.recv())
            assert answer[0] == 3, answer

    start = time.perf_counter() + 0.1
    try:
        await asyncio.gather(*(station(n, s, start) for n, s in enumerate(sockets)))
        deadline = time.perf_counter() + ARRIVAL_TIMEOUT
        while len(receiver.marked.keys() & sent.keys()) < len(sent):
            if time.perf_counter() > deadline:
                arrived = len(receiver.marked.keys() & sent.keys())
                raise RuntimeError(f"{arrived} of {len(sent)} paced events reached the receiver")
            await asyncio.sleep(0.01)
    finally:
        await asyncio.gather(*(s.close() for s in sockets), return_exceptions=True)
    latencies = [(receiver.marked[mark] - at) * 1000 for mark, at in sent.items()]
    quantiles = statistics.quantiles(latencies, n=100)
    instants = sorted(sent.values())
    return quantiles[49], quantiles[98], (len(instants) - 1) / (instants[-1] - instants[0])


def _run(database_url: str | None, server_url: str | None) -> list[Result]:
    """On `database_url` (SQLite when None); the one-lane bench on a database of its own on `server_url`."""
    store = "PostgreSQL" if database_url else "SQLite"
    [one_lane, _] = asyncio.run(bench_webhooks._throughput(1, bench_webhooks.SINGLE_LANE_EVENTS, server_url))
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "data"
        port = _free_port()

        async def measure() -> tuple[float, tuple[float, float, float]]:
            receiver = bench_webhooks.Receiver()
            await receiver.start()
            try:
                await _prepare_store(data, database_url, f"http://127.0.0.1:{receiver.port}/hook")
                serve = ["-m", "chargenet", "serve", "--port", str(port), "--data-dir", str(data)]
                serve += ["--log-level", "error", "--webhook-allow-private"]
                if database_url:
                    serve += ["--database-url", database_url]
                server = _start(serve, port)
                try:
                    rate = await _pipeline(f"ws://127.0.0.1:{port}/ocpp", receiver)
                    return rate, await _paced(f"ws://127.0.0.1:{port}/ocpp", receiver)
                finally:
                    server.terminate()
                    server.wait()
            finally:
                await receiver.stop()

        rate, (p50, p99, paced_rate) = asyncio.run(measure())
    print(
        f"status to partner ({store}), {STATIONS * CONNECTORS} connectors of one site: {rate:,.0f} events/s through "
        f"the edge, filler, lane and acknowledgements (target {RATE_TARGET:,.0f}/s on SQLite); the one-lane bench "
        f"{one_lane.ours:,.0f}/s in the same run; paced at {PACED_RATE}/s ({paced_rate:,.0f}/s sent), frame to "
        f"partner p50 {p50:.0f} ms, p99 {p99:.0f} ms (target under {P99_TARGET_MS:.0f} ms)",
        flush=True,
    )
    misses = []
    if database_url is None and rate < RATE_TARGET:
        misses.append(f"{rate:,.0f} events/s < {RATE_TARGET:,.0f}")
    if p99 >= P99_TARGET_MS:
        misses.append(f"p99 {p99:.0f} ms >= {P99_TARGET_MS:.0f} ms at {PACED_RATE} events/s")
    return [
        Result(
            f"status frames to delivered webhooks vs the one-lane bench ({store})",
            rate,
            one_lane.ours,
            "events/s",
            target=RATIO_TARGET,
            failure="; ".join(misses),
        )
    ]


def run() -> list[Result]:
    results = _run(None, None)
    server_url = os.environ.get(POSTGRES_SERVER)
    if server_url:
        database_url = asyncio.run(create_database(server_url))
        try:
            results += _run(database_url, server_url)
        finally:
            asyncio.run(drop_database(server_url, database_url))
    return results
