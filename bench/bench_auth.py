"""Token grants per second and the cost of the bearer check, each against a baseline from the same run.

The server runs in its own process (so on one core); this process drives it over loopback with a minimal
keep-alive HTTP/1.1 client on asyncio streams, fast enough that the server, not the client, is measured.

1. `POST /auth/oauth2/token` (Basic client authentication, database lookup, keyed hash, RS256 signature)
   against a bare endpoint that only signs the same JWT. Targets: 2,000 grants/s on SQLite, 1,000 on PostgreSQL.
2. `GET /api/v1/charge-points?limit=100` with a bearer token, the store holding STATIONS stations (one charge
   point and two connectors each), from CLIENTS concurrent keep-alive clients, against the same route without
   the check, while every station holds an OCPP connection to the same process and sends a Heartbeat every
   HEARTBEAT_PERIOD seconds (10,000 stations: about 170 a second; `bench._heartbeat_fleet`, a process of its
   own). Targets: the protected rate at least 0.85 of the unprotected one; at least 1,500 requests/s on SQLite
   and 1,000 on PostgreSQL, with a p99 under 100 ms. A heartbeat left unanswered fails the benchmark.
3. `GET /api/v1/charge-points/{id}`, each client asking for its own charge point, against the list's page of fifty
   in the same run, the fleet still connected. Targets: at least the list's request rate, p99 under 50 ms.

Both on SQLite, then on a fresh database of the PostgreSQL server `make bench` starts.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from sqlalchemy import insert, text

from bench.common import POSTGRES_SERVER, Result, create_database, drop_database
from chargenet.app import open_context
from chargenet.config import load_settings
from chargenet.domain.rate_limits import MAX_REQUESTS
from chargenet.domain.security_profiles import SecurityProfile
from chargenet.services import applications, companies, groups, sites, stations
from chargenet.services.callers import OPERATOR
from chargenet.store.models import ChargePoint, Connector, Station

CONNECTIONS = 16
STATIONS = int(os.environ.get("CHARGENET_BENCH_STATIONS", "10000"))
CLIENTS = 50  # concurrent clients of the charge points list
HEARTBEAT_PERIOD = 60.0  # seconds between a connected station's heartbeats while the list is measured
LIST_TARGET = {"SQLite": 1500.0, "PostgreSQL": 1000.0}  # requests/s
TOKEN_TARGET = {"SQLite": 2000.0, "PostgreSQL": 1000.0}  # grants/s
DURATION = 1.5
WARMUP = 0.3
ROUNDS = 4  # ours and baseline alternate, so a load change on the shared machine hits both alike
ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _setup(data_dir: str, database_url: str | None) -> tuple[str, str, str, list[str]]:
    settings = load_settings(_values(data_dir, database_url), environ={})
    context = await open_context(settings)
    now = context.clock.now()
    async with context.store.transaction() as session:
        company = await companies.create_company(session, OPERATOR, name="Bench", now=now)
        site = await sites.create_site(
            session, OPERATOR, context.keys.credential_cipher(), company_id=company.id, name="S", now=now
        )
        for i in range(20):
            await stations.create_station(
                session,
                OPERATOR,
                context.keys.secret_hasher(),
                context.keys.credential_cipher(),
                site_id=site.id,
                station_id=f"ST-{i:02d}",
                now=now,
                connectors=2,
            )
        app = await applications.create_application(
            session, OPERATOR, context.keys.secret_hasher(), company_id=company.id, name="bench", now=now
        )
        group = await groups.create_group(
            session, OPERATOR, company_id=company.id, name="g", scopes=["charge-points:read"], now=now
        )
        await groups.add_app(session, OPERATOR, group.id, app.client_id, now=now)
        # The bench measures what a request costs with the limiter admitting it, not the 429s past a quota.
        await applications.set_rate_limit(session, OPERATOR, app.client_id, requests=MAX_REQUESTS, now=now)
        # The rest of the fleet, written directly: the list reads them, nothing here logs them in.
        ids = [f"BULK-{n:05d}" for n in range(STATIONS - 20)]
        await session.execute(
            # Security profile 0, as `create_station` gives a station without a password: the fleet connects without.
            insert(Station).values(created_at=now, security_profile=SecurityProfile.NO_PASSWORD),
            [{"id": i, "site_id": site.id, "charge_points": 1, "connectors_per_charge_point": 2} for i in ids],
        )
        await session.execute(
            insert(ChargePoint), [{"id": i, "station_id": i, "site_id": site.id, "ordinal": 1} for i in ids]
        )
        await session.execute(
            insert(Connector), [{"charge_point_id": i, "connector_id": c} for i in ids for c in (1, 2)]
        )
    if database_url:
        # What autovacuum does after a bulk load, before the bench asks: without statistics PostgreSQL plans the
        # page from a guess of one row a table (2 ms instead of 0.2 ms for the page's own statement).
        async with context.store.engine.connect() as connection:
            await connection.execute(text("ANALYZE"))
            await connection.commit()
    await context.close()
    return company.id, app.client_id, app.client_secret, [f"ST-{i:02d}" for i in range(20)] + ids


async def _connection(
    port: int, request: bytes, deadline: float, warm_until: float, counts: list[int], latencies: list[float]
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while (now := time.perf_counter()) < deadline:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            )
            await reader.readexactly(length)
            if status != 200:
                raise RuntimeError(f"benchmark request failed with {status}")
            if now >= warm_until:
                counts[0] += 1
                latencies.append(time.perf_counter() - now)
    finally:
        writer.close()


@dataclass
class Heartbeats:
    sent: int
    answered: int
    failures: dict[str, int]
    seconds: float
    p99_ms: float

    @property
    def per_second(self) -> float:
        return self.answered / self.seconds if self.seconds else 0.0

    @property
    def missed(self) -> str:
        """What went wrong, empty when every heartbeat sent was answered."""
        problems = [f"{kind} x{count}" for kind, count in self.failures.items()]
        if self.answered < self.sent:
            problems.append(f"{self.sent - self.answered} of {self.sent} unanswered")
        return ", ".join(problems)


async def _connect_fleet(port: int, station_ids: list[str]) -> asyncio.subprocess.Process:
    """The stations of `bench._heartbeat_fleet`, once all of them are connected and the edge has settled."""
    fleet = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench._heartbeat_fleet",
        f"ws://127.0.0.1:{port}/ocpp",
        str(HEARTBEAT_PERIOD),
        *station_ids,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert fleet.stdout is not None
        line = await asyncio.wait_for(fleet.stdout.readline(), timeout=300)
        if not line.startswith(b"connected "):
            raise RuntimeError(f"the heartbeat fleet did not connect: {line!r}")
    except BaseException:
        await _end(fleet)
        raise
    # The connections' own writes (presence rows) settle before the list is measured.
    await asyncio.sleep(2)
    return fleet


async def _stop_fleet(fleet: asyncio.subprocess.Process) -> Heartbeats:
    assert fleet.stdout is not None
    try:
        fleet.terminate()
        line = await asyncio.wait_for(fleet.stdout.readline(), timeout=60)
    finally:
        await _end(fleet)
    if not line:
        return Heartbeats(0, 0, {"the fleet ended without a report": 1}, 0.0, 0.0)
    report = json.loads(line)
    return Heartbeats(report["sent"], report["answered"], report["failures"], report["seconds"], report["p99_ms"])


async def _end(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    await process.wait()


@dataclass
class Rate:
    per_second: float
    p99_ms: float
    p50_ms: float = 0.0
    rounds_p99_ms: tuple[float, ...] = ()  # each round's p99, of which `p99_ms` is the worst

    @property
    def rounds(self) -> str:
        """Each round's p99, so that one round's stall reads apart from a tail in every round."""
        return "/".join(f"{p99:.0f}" for p99 in self.rounds_p99_ms)


async def _rate(port: int, request: bytes | list[bytes], connections: int) -> Rate:
    """Requests per second from `connections` keep-alive clients; with a list of requests, client k sends the k-th
    (modulo its length). A request counts, its latency too, when it began after the warm-up and before the deadline,
    however late its answer came; a round in which no such request was answered (a stall longer than the round) has
    an infinite p99."""
    requests = request if isinstance(request, list) else [request]
    counts = [0]
    latencies: list[float] = []
    start = time.perf_counter()
    warm_until, deadline = start + WARMUP, start + WARMUP + DURATION
    await asyncio.gather(
        *(
            _connection(port, requests[k % len(requests)], deadline, warm_until, counts, latencies)
            for k in range(connections)
        )
    )
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000 if latencies else float("inf")
    p50 = latencies[len(latencies) // 2] * 1000 if latencies else float("inf")
    return Rate(counts[0] / DURATION, p99, p50)


async def _paired(
    port: int, ours: bytes | list[bytes], baseline: bytes, connections: int = CONNECTIONS
) -> tuple[Rate, Rate]:
    """Ours and the baseline alternate over ROUNDS; the mean rate, the worst round's p99 and the median round's p50
    of each."""
    ours_rates, baseline_rates = [], []
    for _ in range(ROUNDS):
        ours_rates.append(await _rate(port, ours, connections))
        baseline_rates.append(await _rate(port, baseline, connections))
    return _summary(ours_rates), _summary(baseline_rates)


def _summary(rounds: list[Rate]) -> Rate:
    return Rate(
        sum(r.per_second for r in rounds) / len(rounds),
        max(r.p99_ms for r in rounds),
        statistics.median(r.p50_ms for r in rounds),
        tuple(r.p99_ms for r in rounds),
    )


def _request(method: str, path: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _values(data_dir: str, database_url: str | None) -> dict[str, object]:
    return {"data_dir": data_dir, **({"database_url": database_url} if database_url else {})}


async def _measure(database_url: str | None) -> list[Result]:
    store = "PostgreSQL" if database_url else "SQLite"
    list_target = LIST_TARGET[store]
    with tempfile.TemporaryDirectory() as scratch:
        company_id, client_id, secret, station_ids = await _setup(scratch, database_url)
        port = _free_port()
        server = subprocess.Popen(  # noqa: ASYNC220 - started once, before any measuring
            [sys.executable, "-m", "bench._auth_server", scratch, str(port), company_id, database_url or ""],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        try:
            async with httpx.AsyncClient() as http:
                for _ in range(300):
                    try:
                        await http.get(f"http://127.0.0.1:{port}/health")
                        break
                    except httpx.TransportError:
                        await asyncio.sleep(0.1)
                response = await http.post(
                    f"http://127.0.0.1:{port}/auth/oauth2/token",
                    data={"grant_type": "client_credentials"},
                    auth=(client_id, secret),
                )
                token = response.json()["access_token"]
            basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
            form = {"Content-Type": "application/x-www-form-urlencoded", "Authorization": f"Basic {basic}"}
            grant = b"grant_type=client_credentials"
            bearer = {"Authorization": f"Bearer {token}"}
            ours_tokens, base_tokens = await _paired(
                port,
                _request("POST", "/auth/oauth2/token", form, grant),
                _request("POST", "/bench/token", {}, b""),
            )
            fleet = await _connect_fleet(port, station_ids)
            try:
                ours_list, base_list = await _paired(
                    port,
                    _request("GET", "/api/v1/charge-points?limit=100", bearer),
                    _request("GET", "/api/v1/bench/charge-points?limit=100", {}),
                    CLIENTS,
                )
                # One charge point by id (each client its own, spread over the fleet) against the list's page of
                # fifty, both with the bearer check.
                spread = station_ids[:: max(1, len(station_ids) // CLIENTS)][:CLIENTS]
                ours_one, page_of_fifty = await _paired(
                    port,
                    [_request("GET", f"/api/v1/charge-points/{station_id}", bearer) for station_id in spread],
                    _request("GET", "/api/v1/charge-points?limit=50", bearer),
                    CLIENTS,
                )
            except BaseException:
                await _end(fleet)  # the list's error is the one to see, not a missing report of the fleet's
                raise
            heartbeats = await _stop_fleet(fleet)
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    print(
        f"token grants ({store}): {ours_tokens.per_second:,.0f}/s on one server process "
        f"(target: {TOKEN_TARGET[store]:,.0f}/s)",
        flush=True,
    )
    print(
        f"GET /charge-points?limit=100 ({store}), {STATIONS:,} stations, {CLIENTS} clients: "
        f"{ours_list.per_second:,.0f} req/s, p99 {ours_list.p99_ms:.0f} ms (target: {list_target:,.0f} req/s, p99 "
        f"under 100 ms); without the bearer check {base_list.per_second:,.0f} req/s, p99 {base_list.p99_ms:.0f} ms; "
        f"meanwhile {len(station_ids):,} stations connected, {heartbeats.per_second:,.0f} heartbeats/s answered "
        f"({heartbeats.answered:,} of {heartbeats.sent:,}, p99 {heartbeats.p99_ms:.0f} ms)",
        flush=True,
    )
    print(
        f"GET /charge-points/{{id}} ({store}), {CLIENTS} clients: {ours_one.per_second:,.0f} req/s, p50 "
        f"{ours_one.p50_ms:.0f} ms, p99 {ours_one.p99_ms:.0f} ms (rounds {ours_one.rounds}; target: at least the "
        f"list's rate, p99 under 50 ms); GET /charge-points?limit=50 {page_of_fifty.per_second:,.0f} req/s, p50 "
        f"{page_of_fifty.p50_ms:.0f} ms, p99 {page_of_fifty.p99_ms:.0f} ms (rounds {page_of_fifty.rounds})",
        flush=True,
    )
    misses = []
    if heartbeats.missed:
        misses.append(f"heartbeats unanswered: {heartbeats.missed}")
    if ours_list.per_second < list_target:
        misses.append(f"{ours_list.per_second:,.0f} req/s < {list_target:,.0f}")
    if ours_list.p99_ms >= 100:
        misses.append(f"p99 {ours_list.p99_ms:.0f} ms >= 100 ms")
    token_miss = ""
    if ours_tokens.per_second < TOKEN_TARGET[store]:
        token_miss = f"{ours_tokens.per_second:,.0f} grants/s < {TOKEN_TARGET[store]:,.0f}"
    return [
        Result(
            f"token grants vs bare JWT signing endpoint ({store})",
            ours_tokens.per_second,
            base_tokens.per_second,
            "req/s",
            failure=token_miss,
        ),
        Result(
            f"GET /charge-points?limit=100 ({STATIONS:,} stations, {CLIENTS} clients, {store}) with bearer check vs "
            "without",
            ours_list.per_second,
            base_list.per_second,
            "req/s",
            target=0.85,
            failure="; ".join(misses),
        ),
        Result(
            f"GET /charge-points/{{id}} vs GET /charge-points?limit=50 ({STATIONS:,} stations, {CLIENTS} clients, "
            f"{store})",
            ours_one.per_second,
            page_of_fifty.per_second,
            "req/s",
            target=1.0,
            failure=f"p99 {ours_one.p99_ms:.0f} ms >= 50 ms" if ours_one.p99_ms >= 50 else "",
        ),
    ]


def run() -> list[Result]:
    results = asyncio.run(_measure(None))
    server_url = os.environ.get(POSTGRES_SERVER)
    if server_url:
        database_url = asyncio.run(create_database(server_url))
        try:
            results += asyncio.run(_measure(database_url))
        finally:
            asyncio.run(drop_database(server_url, database_url))
    return results
