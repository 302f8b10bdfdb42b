"""Console page latency with a full store (target: p99 under 100 ms for every page but the sign-in POST, which
argon2id makes slow on purpose): 10,000 stations over 10 sites, 100 webhooks whose delivery logs hold 100,000
attempts, 1,000 applications and 200 groups of five, 100,000 completed sessions over 30 days (the newest 1,000
with 20 meter values each) and 200,000 frames in the OCPP message log.

A real `chargenet serve` (SQLite) in its own process; this process signs one operator in, finds the console's
pages by following the links of its navigation and of each list's first rows (so a new page is measured without
editing this file), then asks each page `REQUESTS` times from one client, as an operator's browser asks, and
again from `CLIENTS` concurrent clients. The budget holds the first: a page's latency. The second is the same
pages under load, reported: four clients queue on one process, on two cores this process shares. The baseline is
the same server's static stylesheet, which touches neither the store nor the templates: the ratio shows what a
page costs beyond the HTTP stack.
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
from datetime import datetime, timedelta
from pathlib import Path

import httpx
from sqlalchemy import insert

from bench.common import Result
from chargenet.config import load_settings
from chargenet.context import open_store
from chargenet.domain.tenants import StationLayout
from chargenet.services import applications, companies, groups, sites, webhooks
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import (
    ChargePoint,
    Connector,
    EdgeTransaction,
    MeterSample,
    OcppMessage,
    Station,
    WebhookDelivery,
)
from chargenet.webhooks.outbound_auth import NoAuth

STATIONS = 10_000
SITES = 10
WEBHOOKS = 100
ATTEMPTS_EACH = 1000  # delivery log rows per webhook
APPLICATIONS = 1000
GROUPS = 200  # of five applications each
SESSIONS = 100_000  # completed OCPP sessions over the last 30 days
SAMPLED = 1000  # the newest sessions, with 20 meter values each
MESSAGES = 200_000  # frames in the OCPP message log
CLIENTS = 4
REQUESTS = 300  # per page and pass: the p99 of 100 would be the slowest one alone
MAX_PAGES = 40
LINKS_PER_PAGE = 3
# Filters a crawl does not follow (they are forms).
FILTERED = ["/console/groups?grants=sites:read"]
BUDGET_MS = 100.0
PASSWORD = "bench-operator-password"
ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'sdk' / 'python'}"}


async def _seed(data_dir: str) -> str:
    """The store: one company, SITES sites sharing STATIONS stations (two connectors each), WEBHOOKS webhooks."""
    settings = load_settings({"data_dir": data_dir}, environ={})
    context = await open_store(settings, migrate=True)
    now = context.clock.now()
    cipher = context.keys.credential_cipher()
    async with context.store.transaction() as session:
        company = await companies.create_company(session, OPERATOR, name="Bench Charging", now=now)
        site_ids = [
            (await sites.create_site(session, OPERATOR, cipher, company_id=company.id, name=f"Site {n}", now=now)).id
            for n in range(SITES)
        ]
    hooks = [
        await webhooks.create_webhook(
            context.store.transaction,
            OPERATOR,
            cipher,
            site_id=site_ids[n % SITES],
            url=f"http://127.0.0.1:9/hook/{n}",
            event_types=["Authorize", "ChargePointStatus", "StartTransaction", "StopTransaction"],
            auth=NoAuth(),
            now=now,
            allow_private=True,
        )
        for n in range(WEBHOOKS)
    ]
    async with context.store.transaction() as session:
        apps = [
            (
                await applications.create_application(
                    session, OPERATOR, context.keys.secret_hasher(), company_id=company.id, name=f"App {n}", now=now
                )
            ).client_id
            for n in range(APPLICATIONS)
        ]
        for n in range(GROUPS):
            group = await groups.create_group(
                session, OPERATOR, company_id=company.id, name=f"Group {n}", scopes=["sites:read"], now=now
            )
            for client_id in apps[n * 5 : n * 5 + 5]:
                await groups.add_app(session, OPERATOR, group.id, client_id, now=now)
        attempts = [
            {
                "webhook_id": hook.id,
                "event_type": "Authorize",
                "event_id": f"00000000-0000-4000-8000-{attempt:012d}",
                "attempt": 1,
                "request_id": f"00000000-0000-4000-9000-{attempt:012d}",
                "at": now,
                "duration_ms": 12.5,
                "delivered": attempt % 10 != 0,
                "status": 204 if attempt % 10 else 503,
                "error": None if attempt % 10 else "HTTP 503",
                "response": "" if attempt % 10 else "busy",
            }
            for hook in hooks
            for attempt in range(ATTEMPTS_EACH)
        ]
        await session.execute(insert(WebhookDelivery), attempts)
    # Stations are written in bulk: seeding through the one-at-a-time use case would measure the seeding.
    station_rows, point_rows, connector_rows = [], [], []
    for n in range(STATIONS):
        station_id, site_id = f"ST-{n:05d}", site_ids[n % SITES]
        station_rows.append(
            {"id": station_id, "site_id": site_id, "charge_points": 1, "connectors_per_charge_point": 2}
        )
        for ordinal, point_id in enumerate(StationLayout(station_id, 1, 2).charge_point_ids, start=1):
            point_rows.append({"id": point_id, "station_id": station_id, "site_id": site_id, "ordinal": ordinal})
            connector_rows += [{"charge_point_id": point_id, "connector_id": c, "status": "Available"} for c in (1, 2)]
    async with context.store.transaction() as session:
        await session.execute(insert(Station).values(created_at=now), station_rows)
        await session.execute(insert(ChargePoint), point_rows)
        await session.execute(insert(Connector).values(status_at=now, updated_at=now), connector_rows)
    await _seed_history(context.store, site_ids, now)
    await context.close()
    return company.id


async def _seed_history(store: Store, site_ids: list[str], now: datetime) -> None:
    """SESSIONS completed OCPP sessions over the last 30 days, the newest SAMPLED of them with 20 meter values
    each, and MESSAGES frames of the message log, so that the sessions, a session and a station's message log
    are measured full."""
    sessions, samples, messages = [], [], []
    for n in range(1, SESSIONS + 1):
        station = n % STATIONS
        started = now - timedelta(days=30) + timedelta(seconds=n * 30 * 86_400 // SESSIONS)
        sessions.append(
            {
                "id": n,
                "station_id": f"ST-{station:05d}",
                "site_id": site_ids[station % SITES],
                "charge_point_id": f"ST-{station:05d}",
                "connector_id": 1 + n % 2,
                "ocpp_connector_id": 1 + n % 2,
                "id_tag": f"TAG-{n % 500:04d}",
                "started_at": started,
                "meter_start": 1000 * n,
                "auth_status": "Accepted",
                "stopped_at": started + timedelta(minutes=40),
                "meter_stop": 1000 * n + 7400,
                "stop_reason": "EVDisconnected",
                "created_at": started,
            }
        )
        if n > SESSIONS - SAMPLED:
            samples += [
                {
                    "transaction_id": n,
                    "station_id": f"ST-{station:05d}",
                    "at": started + timedelta(minutes=2 * k),
                    "energy_wh": 1000 * n + 370 * k,
                    "power_w": 11_100.0,
                }
                for k in range(20)
            ]
    for n in range(MESSAGES):
        station_id = f"ST-{n % STATIONS:05d}"
        frame = json.dumps(
            [2, f"m{n}", "StatusNotification", {"connectorId": 1, "status": "Available", "errorCode": "NoError"}]
        )
        messages.append(
            {
                "station_id": station_id,
                "peer": "station",
                "direction": "in",
                "frame": frame,
                "at": now - timedelta(seconds=MESSAGES - n),
                "message_type": 2,
                "message_id": f"m{n}",
                "action": "StatusNotification",
            }
        )
    async with store.transaction() as session:
        await session.execute(insert(EdgeTransaction), sessions)
        await session.execute(insert(MeterSample), samples)
        await session.execute(insert(OcppMessage), messages)


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


async def _sign_in(client: httpx.AsyncClient) -> None:
    form = await client.get("/console/login")
    form.raise_for_status()
    answer = await client.post(
        "/console/login",
        data={"email": "operator@bench.test", "password": PASSWORD},
        headers={"Origin": str(client.base_url).rstrip("/")},
    )
    if answer.status_code != 303:
        raise RuntimeError(f"sign-in failed with {answer.status_code}")


_LINK = re.compile(r'href="(/console/[^"#]*)"')


async def _pages(client: httpx.AsyncClient) -> list[str]:
    """The console's GET pages, found by following links from the overview: every link of the navigation, then a
    few of each page's own (its first rows stand for the rest), breadth first, up to MAX_PAGES."""
    seen: list[str] = []
    queue = ["/console/", *FILTERED]
    while queue and len(seen) < MAX_PAGES:
        path = queue.pop(0)
        answer = await client.get(path)
        if answer.status_code != 200 or "text/html" not in answer.headers.get("content-type", ""):
            continue
        seen.append(path)
        links = [
            link.replace("&amp;", "&")
            for link in _LINK.findall(answer.text)
            if "/static/" not in link and "logout" not in link
        ]
        new = [link for link in dict.fromkeys(links) if link not in seen and link not in queue]
        queue += new if path == "/console/" else new[:LINKS_PER_PAGE]
    return seen


async def _latencies(client: httpx.AsyncClient, path: str, clients: int) -> list[float]:
    times: list[float] = []

    async def one_client(count: int) -> None:
        for _ in range(count):
            start = time.perf_counter()
            answer = await client.get(path)
            times.append((time.perf_counter() - start) * 1000)
            if answer.status_code != 200:
                raise RuntimeError(f"{path} answered {answer.status_code}")

    await asyncio.gather(*(one_client(REQUESTS // clients) for _ in range(clients)))
    return times


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))]


async def _measure() -> list[Result]:
    with tempfile.TemporaryDirectory() as scratch:
        company_id = await _seed(scratch)
        _cli(
            scratch,
            "admin",
            "operator",
            "create",
            "--company",
            company_id,
            "--email",
            "operator@bench.test",
            "--role",
            "owner",
            "--password-stdin",
            stdin=PASSWORD + "\n",
        )
        port = _free_port()
        server = subprocess.Popen(  # noqa: ASYNC220 - started once, before any measuring
            [
                sys.executable,
                "-m",
                "chargenet",
                "serve",
                "--port",
                str(port),
                "--data-dir",
                scratch,
                "--log-level",
                "error",
            ],
            env=ENV,
            stdout=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            limits = httpx.Limits(max_connections=CLIENTS)
            async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:
                for _ in range(600):
                    try:
                        if (await client.get("/health")).status_code < 500:
                            break
                    except httpx.TransportError:
                        await asyncio.sleep(0.1)
                await _sign_in(client)
                paths = await _pages(client)
                baseline = await _latencies(client, "/console/static/console.css", 1)
                alone = {path: await _latencies(client, path, 1) for path in paths}
                loaded_baseline = await _latencies(client, "/console/static/console.css", CLIENTS)
                loaded = {path: await _latencies(client, path, CLIENTS) for path in paths}
        finally:
            server.terminate()
            server.wait(timeout=30)
    base99, loaded_base99 = _p(baseline, 99), _p(loaded_baseline, 99)
    results = []
    for path, times in alone.items():
        p99 = _p(times, 99)
        over = f"p99 {p99:.0f} ms is over the {BUDGET_MS:.0f} ms budget" if p99 >= BUDGET_MS else ""
        results.append(Result(f"console GET {path} p99 (ms) vs static file", p99, base99, "ms", failure=over))
    for path, times in loaded.items():
        # Reported, not held to the budget: four clients queue on one process and on the cores the client shares.
        p99 = _p(times, 99)
        results.append(
            Result(f"console GET {path} p99 (ms), {CLIENTS} clients, vs static file", p99, loaded_base99, "ms")
        )
    for name, measured, static in (("one client", alone, base99), (f"{CLIENTS} clients", loaded, loaded_base99)):
        everything = [t for times in measured.values() for t in times]
        over = sum(1 for times in measured.values() if _p(times, 99) >= BUDGET_MS)
        print(
            f"console, {name}: {len(paths)} pages, {len(everything)} requests, {STATIONS:,} stations, "
            f"{WEBHOOKS} webhooks; p50 {_p(everything, 50):.1f} ms, p99 {_p(everything, 99):.1f} ms, {over} pages "
            f"with p99 over {BUDGET_MS:.0f} ms (static file p99 {static:.1f} ms)",
            flush=True,
        )
    return results


def run() -> list[Result]:
    return asyncio.run(_measure())
