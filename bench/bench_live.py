"""The live connector table's event stream (target: a station's status reaches every open browser within one
second at p99, with 10,000 stations, 500 status changes a second and 50 browsers; and the memory per browser).

A real `chargenet serve` (SQLite) in its own process holds the 50 browser streams, opened by a third process
(`bench.sse_browsers`: one connection each, all of the one company that owns every station). This process is
"another process sharing the store": it commits the status changes as the edge's writer does (decided in
memory against each connector's last status, written by `edge.statuses.write_statuses` in batches of 50 every
100 ms), so the server's feed finds them by its poll, the slower of its two ways (its own commits wake it at
once). Latency is from a batch's commit to the receipt of the row by the last of the browsers, on the machine's
monotonic clock; each change is marked by its `info` text. The baseline is the poll interval (500 ms): the ratio
is how much of it the stream costs on top. Memory per browser is the server's resident size with the streams
open, less before, over their number.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
from sqlalchemy import insert

from bench.common import Result
from chargenet.clock import SystemClock
from chargenet.config import load_settings
from chargenet.context import open_store
from chargenet.domain.connectors import KnownStatus
from chargenet.domain.events import ChargePointErrorCode, ConnectorStatus
from chargenet.domain.tenants import StationLayout, locate_connector
from chargenet.edge.statuses import LoadedConnector, decide, write_statuses
from chargenet.outbox import Outbox
from chargenet.services import companies, sites
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import ChargePoint, Connector, Station, StationPresence

STATIONS = 10_000
SITES = 10
BROWSERS = int(os.environ.get("BENCH_LIVE_BROWSERS", "50"))
RATE = 500  # status changes a second, in total
BATCH = 50  # changes a commit
SECONDS = 8
BUDGET_MS = 1000.0
POLL_MS = 500.0
NO_ERROR = ChargePointErrorCode.NO_ERROR
PASSWORD = "bench-operator-password"
SERVE_FLAGS = ("--log-level", "error")
ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'sdk' / 'python'}"}
_MARK = re.compile(rb"<td>m(\d+)</td>")


async def _seed(data_dir: str) -> tuple[str, list[str]]:
    """One company; SITES sites sharing STATIONS stations of one charge point and two connectors, all connected."""
    context = await open_store(load_settings({"data_dir": data_dir}, environ={}), migrate=True)
    now = context.clock.now()
    async with context.store.transaction() as session:
        company = await companies.create_company(session, OPERATOR, name="Bench Charging", now=now)
        site_ids = [
            (
                await sites.create_site(
                    session, OPERATOR, context.keys.credential_cipher(), company_id=company.id, name=f"S{n}", now=now
                )
            ).id
            for n in range(SITES)
        ]
    stations, points, connectors, presence = [], [], [], []
    for n in range(STATIONS):
        station_id, site_id = f"ST-{n:05d}", site_ids[n % SITES]
        stations.append({"id": station_id, "site_id": site_id, "charge_points": 1, "connectors_per_charge_point": 2})
        [point_id] = StationLayout(station_id, 1, 2).charge_point_ids
        points.append({"id": point_id, "station_id": station_id, "site_id": site_id, "ordinal": 1})
        connectors += [{"charge_point_id": point_id, "connector_id": c, "status": "Available"} for c in (1, 2)]
        presence.append({"station_id": station_id, "connected": True, "connected_at": now, "last_seen_at": now})
    async with context.store.transaction() as session:
        await session.execute(insert(Station).values(created_at=now), stations)
        await session.execute(insert(ChargePoint), points)
        await session.execute(insert(Connector).values(status_at=now, updated_at=now), connectors)
        await session.execute(insert(StationPresence), presence)
    await context.close()
    return company.id, site_ids


def _cli(data_dir: str, *args: str, stdin: str = "") -> None:
    subprocess.run(
        [sys.executable, "-m", "chargenet", *args, "--data-dir", data_dir],
        input=stdin,
        text=True,
        check=True,
        env=ENV,
        capture_output=True,
    )


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))]


async def _write(store: Store, site_ids: list[str], committed: dict[int, float]) -> None:
    """RATE changes a second for SECONDS, BATCH a commit, each connector toggling between two statuses: decided
    in memory against each connector's last status and written a batch at a time by `write_statuses`, as a
    station link and the edge's group committer do."""
    clock = SystemClock()
    outbox = Outbox(clock)
    statuses = (ConnectorStatus.PREPARING, ConnectorStatus.AVAILABLE)
    last: dict[tuple[int, int], KnownStatus] = {}
    start = time.monotonic()
    for batch in range(RATE * SECONDS // BATCH):
        await asyncio.sleep(max(0.0, start + batch * BATCH / RATE - time.monotonic()))
        numbers = range(batch * BATCH, (batch + 1) * BATCH)
        writes = []
        for n in numbers:
            station, connector = n % STATIONS, 1 + (n // STATIONS) % 2
            station_id = f"ST-{station:05d}"
            address = locate_connector(StationLayout(station_id, 1, 2), connector)
            now = datetime.now(UTC)
            reported = KnownStatus(statuses[(n // (2 * STATIONS)) % 2], NO_ERROR, f"m{n}", now)
            before = last.get((station, connector), KnownStatus(ConnectorStatus.AVAILABLE, NO_ERROR, None, now))
            write, _ = decide(
                station_id, site_ids[station % SITES], address, LoadedConnector(True, before), reported, now
            )
            last[(station, connector)] = reported
            writes.append(write)
        async with store.transaction() as session:
            await write_statuses(session, outbox, writes)
        done = time.monotonic()
        for n in numbers:
            committed[n] = done


async def _measure() -> list[Result]:
    with tempfile.TemporaryDirectory() as scratch:
        company_id, site_ids = await _seed(scratch)
        _cli(
            scratch,
            *("admin", "operator", "create", "--company", company_id, "--email", "operator@bench.test"),
            *("--role", "owner", "--password-stdin"),
            stdin=PASSWORD + "\n",
        )
        port = _free_port()
        server = subprocess.Popen(  # noqa: ASYNC220 - started once, before any measuring
            [sys.executable, "-m", "chargenet", "serve", *SERVE_FLAGS, "--port", str(port), "--data-dir", scratch],
            env=ENV,
            stdout=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        store = Store(load_settings({"data_dir": scratch}, environ={}).database_url)
        committed: dict[int, float] = {}
        try:
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                for _ in range(600):
                    try:
                        if (await client.get("/health")).status_code < 500:
                            break
                    except httpx.TransportError:
                        await asyncio.sleep(0.1)
                answer = await client.post(
                    "/console/login",
                    data={"email": "operator@bench.test", "password": PASSWORD},
                    headers={"Origin": base},
                )
                if answer.status_code != 303:
                    raise RuntimeError(f"sign-in failed with {answer.status_code}")
                page = await client.get("/console/connectors")
                found = re.search(r'data-live-stream="([^"]+)"', page.text)
                if not found:
                    raise RuntimeError("the live page names no stream")
                stream_url = found.group(1).replace("&amp;", "&")
                cookie = "; ".join(f"{name}={value}" for name, value in client.cookies.items())
                before = _rss_kib(server.pid)
                browsers = await asyncio.create_subprocess_exec(
                    *(sys.executable, "-m", "bench.sse_browsers", "127.0.0.1", str(port), stream_url, cookie),
                    str(BROWSERS),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    env=ENV,
                    cwd=ROOT,
                )
                assert browsers.stdin is not None and browsers.stdout is not None
                if (await browsers.stdout.readline()).strip() != b"ready":
                    raise RuntimeError("the browsers' streams did not open")
                await asyncio.sleep(2)  # the streams are open and settled
                with_streams = _rss_kib(server.pid)
                cpu_before, wall_before = _cpu_seconds(server.pid), time.monotonic()
                await _write(store, site_ids, committed)
                written = time.monotonic() - wall_before
                busy = (_cpu_seconds(server.pid) - cpu_before) / written
                await asyncio.sleep(3)  # the last changes reach the browsers (a poll is 0.5 s)
                browsers.stdin.close()
                out, _ = await browsers.communicate()
                if browsers.returncode != 0:
                    raise RuntimeError("the browsers' process failed")
                seen = [{int(mark): at for mark, at in got.items()} for got in json.loads(out)]
        finally:
            await store.dispose()
            server.terminate()
            server.wait(timeout=30)
    missing = sum(1 for got in seen for n in committed if n not in got)
    # A change is shown everywhere once the last browser has it: that is the figure the budget is for.
    everywhere = [max(got[n] for got in seen) - committed[n] for n in committed if all(n in got for got in seen)]
    each = [got[n] - committed[n] for got in seen for n in committed if n in got]
    p99 = _p(everywhere, 99) * 1000
    per_browser = (with_streams - before) / BROWSERS
    print(
        f"live: {STATIONS:,} stations, {BROWSERS} browsers, {len(committed):,} changes committed by another process "
        f"at {len(committed) / written:.0f}/s (asked {RATE}/s); commit to every browser p50 "
        f"{_p(everywhere, 50) * 1000:.0f} ms, p99 {p99:.0f} ms (to each browser p50 {_p(each, 50) * 1000:.0f} ms, "
        f"p99 {_p(each, 99) * 1000:.0f} ms), {missing} not received; server memory {before / 1024:.0f} MiB, "
        f"{per_browser:.0f} KiB a browser; server CPU {busy:.0%} of a core while the changes came",
        flush=True,
    )
    failures = []
    if missing:
        failures.append(f"{missing} rows never reached a browser")
    if p99 >= BUDGET_MS:
        failures.append(f"p99 {p99:.0f} ms is over the {BUDGET_MS:.0f} ms budget")
    return [
        Result(
            "live status: commit to every browser p99 (ms) vs poll interval",
            p99,
            POLL_MS,
            "ms",
            failure="; ".join(failures),
        ),
        Result("live status: server memory a browser (KiB) vs none", per_browser, 1, "KiB"),
    ]


def run() -> list[Result]:
    return asyncio.run(_measure())
