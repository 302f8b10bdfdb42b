"""Two processes on one PostgreSQL: a station connected to a real `chargenet serve` process, the live status page
open on another process (this one, served by uvicorn), and the station's row changes in that page's stream, then
turns offline when the station goes. Nothing in memory is shared: the other process's notifications wake this
one's live feed through PostgreSQL (`store.notify`), and its poll is the fallback."""

from __future__ import annotations

import asyncio
import html
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import uvicorn

from chargenet.app import create_app, open_context
from chargenet.config import load_settings
from chargenet.services import companies, sites, stations
from chargenet.services.callers import OPERATOR
from chargenet.simulators.station import SimulatedStation
from tests.support.operators import PASSWORD, add_operator, cheap_passwords
from tests.support.ports import free_port
from tests.support.serve import serve_on
from tests.support.sse import next_row

ROOT = Path(__file__).resolve().parents[3]


@asynccontextmanager
async def live_lines(origin: str) -> AsyncIterator[AsyncIterator[str]]:
    """The lines of the connectors page's live stream, signed in to the console at `origin` as the owner."""
    async with httpx.AsyncClient(base_url=origin, timeout=20) as browser:
        signed = await browser.post(
            "/console/login", data={"email": "owner@acme.test", "password": PASSWORD}, headers={"Origin": origin}
        )
        assert signed.status_code == 303
        page = await browser.get("/console/connectors")
        found = re.search(r'data-live-stream="([^"]+)"', page.text)
        assert found
        async with browser.stream("GET", html.unescape(found.group(1))) as response:
            yield response.aiter_lines()


async def test_a_station_held_by_another_process_changes_its_row_in_this_processs_stream(
    pg_url: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    settings = load_settings({"database_url": pg_url, "data_dir": str(data_dir), "port": port}, environ={})
    context = await open_context(settings)
    passwords = cheap_passwords()
    now = context.clock.now()
    async with context.store.transaction() as session:
        company = await companies.create_company(session, OPERATOR, name="Acme", now=now)
        site = await sites.create_site(
            session, OPERATOR, context.keys.credential_cipher(), company_id=company.id, name="Harbour", now=now
        )
        await stations.create_station(
            session,
            OPERATOR,
            context.keys.secret_hasher(),
            context.keys.credential_cipher(),
            site_id=site.id,
            station_id="CS-AWAY",
            now=now,
            connectors=1,
        )
    await add_operator(context.store.transaction, passwords, now, company_id=company.id, email="owner@acme.test")
    app = create_app(context, console_passwords=passwords)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    here = asyncio.create_task(server.serve())
    other_port = free_port()
    elsewhere = await serve_on(data_dir, other_port, "--database-url", pg_url)
    station = SimulatedStation(f"ws://127.0.0.1:{other_port}/ocpp", "CS-AWAY")
    try:
        while not server.started:
            await asyncio.sleep(0.01)
        async with live_lines(f"http://127.0.0.1:{port}") as lines:
            await station.connect()
            await station.boot(vendor="Sim", model="Away")
            await station.status(1, "Available")
            await next_row(lines, 'id="live-CS-AWAY-1"', "status-available")
            await station.status(1, "Preparing")
            await station.status(1, "Charging")
            await next_row(lines, 'id="live-CS-AWAY-1"', "status-charging")
            await station.close()
            await next_row(lines, 'id="live-CS-AWAY-1"', "status-offline", "last reported Charging")
    finally:
        await station.close()
        elsewhere.terminate()
        await elsewhere.wait()
        if context.on_stopping:
            for hook in context.on_stopping:
                hook()
        server.should_exit = True
        await here
        await context.close()


async def test_a_serve_process_asked_to_stop_ends_its_open_streams_at_once(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    context = await open_context(load_settings({"data_dir": str(data_dir)}, environ={}))
    try:
        async with context.store.transaction() as session:
            company = await companies.create_company(session, OPERATOR, name="Acme", now=context.clock.now())
        await add_operator(
            context.store.transaction,
            cheap_passwords(),
            context.clock.now(),
            company_id=company.id,
            email="owner@acme.test",
        )
    finally:
        await context.close()
    port = free_port()
    process = await serve_on(data_dir, port, "--database-url", f"sqlite+aiosqlite:///{data_dir / 'chargenet.db'}")
    try:
        async with live_lines(f"http://127.0.0.1:{port}") as lines:
            await anext(lines)  # the stream is open
            started = time.monotonic()
            process.terminate()
            # Well before the server's 10 s graceful timeout: the stream ended first, without `event: end`
            # (which would send the browser to the sign-in page rather than reconnect).
            rest = [line async for line in lines]
            assert not any(line.startswith("event: ") for line in rest)
        assert await asyncio.wait_for(process.wait(), 10) == 0
        assert time.monotonic() - started < 5
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
