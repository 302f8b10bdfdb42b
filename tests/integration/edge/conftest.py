"""A real chargenet (uvicorn, the one ASGI app, SQLite or PostgreSQL) on loopback, for the edge's tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from sqlalchemy import select
from starlette.routing import Mount

from chargenet.app import AppContext, create_app, open_context
from chargenet.clock import Clock, ManualClock
from chargenet.config import load_settings
from chargenet.edge.hub import Edge
from chargenet.edge.transport import StationWebSocketProtocol
from chargenet.services import sites
from chargenet.services.callers import OPERATOR
from chargenet.services.directory import ChargePointDirectory
from chargenet.simulators.cpo import SimulatedCentralSystem
from chargenet.simulators.station import SimulatedStation
from chargenet.store.models import OutboxEvent
from tests.factories import Tenant, add_station, make_tenant, partner_token
from tests.support.in_loop import start_serving
from tests.support.ports import free_port
from tests.support.templates import prepare_data_dir

PASSWORD = "0123456789abcdef0123"


def directory_of(server: uvicorn.Server) -> ChargePointDirectory:
    """The charge point directory of the app `server` runs (`services.directory`)."""
    app = server.config.app
    api = next(route.app for route in app.routes if isinstance(route, Mount) and route.path == "/api/v1")
    directory = api.state.directory
    assert isinstance(directory, ChargePointDirectory)
    return directory


@dataclass
class Served:
    context: AppContext
    port: int
    tenant: Tenant
    token: str  # a partner's bearer token granting the edge's scopes over the tenant's company
    directory: ChargePointDirectory  # the copy GET /charge-points is served from

    @property
    def edge(self) -> Edge:
        assert self.context.edge is not None
        return self.context.edge

    @property
    def ocpp_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ocpp"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def station(self, station_id: str | None = None, password: str | bytes | None = PASSWORD) -> SimulatedStation:
        return SimulatedStation(self.ocpp_url, station_id or self.tenant.station_id, password)

    async def events(self, event_type: str | None = None) -> list[dict[str, Any]]:
        async with self.context.store.transaction() as session:
            query = select(OutboxEvent.body).order_by(OutboxEvent.position)
            if event_type is not None:
                query = query.where(OutboxEvent.event_type == event_type)
            return [json.loads(body) for body in await session.scalars(query)]

    async def add_station(self, station_id: str, *, site_id: str | None = None, **layout: Any) -> None:
        """Another station, of the tenant's site unless `site_id` names one; `layout` as `factories.add_station`
        takes it (no password unless given)."""
        async with self.context.store.transaction() as session:
            now = self.context.clock.now()
            await add_station(session, self.context.keys, site_id or self.tenant.site_id, station_id, now, **layout)

    async def point_site_at(self, cpo: SimulatedCentralSystem, password: str | None = None) -> None:
        await self.set_upstream(cpo.url, password)

    async def set_upstream(self, url: str, password: str | None = None, ocpp_versions: list[str] | None = None) -> None:
        """The tenant's site gets the upstream central system at `url` (taking `ocpp_versions`: 1.6 by default)."""
        async with self.context.store.transaction() as session:
            await sites.update_site(
                session,
                OPERATOR,
                self.context.keys.credential_cipher(),
                self.tenant.site_id,
                now=self.context.clock.now(),
                upstream_url=url,
                upstream_password=password,
                upstream_ocpp_versions=ocpp_versions,
            )


def manual_clock(served: Served) -> ManualClock:
    """The clock of `served_manual`, which the test moves."""
    clock = served.context.clock
    assert isinstance(clock, ManualClock)
    return clock


async def serve_chargenet(
    tmp_path: Path, database_url: str | None = None, clock: Clock | None = None, **settings: Any
) -> tuple[AppContext, uvicorn.Server, asyncio.Task[None], int]:
    """chargenet on a free loopback port; `settings` are more settings, as flags name them."""
    port = free_port()
    flags = {**settings, "data_dir": str(tmp_path / "data"), "port": str(port)}
    if database_url:
        flags["database_url"] = database_url
    else:
        prepare_data_dir(tmp_path / "data")
    settings = load_settings(flags, {})
    context = await open_context(settings, clock=clock)
    config = uvicorn.Config(
        create_app(context),
        host="127.0.0.1",
        port=port,
        ws=StationWebSocketProtocol,
        ws_max_size=settings.ocpp_max_frame,
        lifespan="on",
        log_config=None,
        access_log=False,
    )
    server = uvicorn.Server(config)
    task = await start_serving(server, poll=0.02)
    return context, server, task, port


@pytest.fixture
async def served(tmp_path: Path, database_url: str) -> AsyncIterator[Served]:
    """chargenet on loopback, once on SQLite and once on PostgreSQL, with station CS-1 (2 connectors)."""
    async for instance in _served(tmp_path, database_url, None):
        yield instance


@pytest.fixture
async def served_manual(tmp_path: Path, database_url: str) -> AsyncIterator[Served]:
    """chargenet on loopback whose clock moves only when the test says so, on SQLite and on PostgreSQL."""
    async for instance in _served(tmp_path, database_url, ManualClock(datetime(2026, 7, 1, 12, 0, tzinfo=UTC))):
        yield instance


@pytest.fixture
async def served_manual_pg(tmp_path: Path, pg_url: str) -> AsyncIterator[Served]:
    """`served_manual` on PostgreSQL alone: for what only processes sharing one store do."""
    async for instance in _served(tmp_path, pg_url, ManualClock(datetime(2026, 7, 1, 12, 0, tzinfo=UTC))):
        yield instance


async def _served(tmp_path: Path, database_url: str | None, clock: Clock | None) -> AsyncIterator[Served]:
    context, server, task, port = await serve_chargenet(tmp_path, database_url, clock)
    tenant = await make_tenant(
        context.store, context.keys, context.clock.now(), station_id="CS-1", password=PASSWORD, connectors=2
    )
    assert context.edge is not None
    token = await partner_token(
        context, tenant.company_id, ["sessions:write", "transactions:read", "charge-points:write"]
    )
    context.edge.command_timeout = timedelta(seconds=2)
    context.edge.upstream_timeout = timedelta(seconds=1)
    try:
        yield Served(context, port, tenant, token, directory_of(server))
    finally:
        server.should_exit = True
        await task
        await context.close()


@pytest.fixture
async def station(served: Served) -> AsyncIterator[SimulatedStation]:
    """Station CS-1, connected and booted."""
    simulated = served.station()
    await simulated.connect()
    await simulated.boot()
    yield simulated
    await simulated.close()


@pytest.fixture
async def duo(served: Served) -> AsyncIterator[SimulatedStation]:
    """Station DUO, connected and booted, the store showing it connected: charge points DUO-1 and DUO-2 of 2
    connectors each (OCPP connectors 1-4)."""
    await served.add_station("DUO", password=PASSWORD, charge_points=2, connectors=2)
    station = served.station("DUO")
    await station.connect()
    await station.boot()
    await served.edge.message_log.run_once()  # the store shows it connected now, not within the next second
    yield station
    await station.close()


@pytest.fixture
async def cpo() -> AsyncIterator[SimulatedCentralSystem]:
    central = SimulatedCentralSystem()
    await central.start()
    try:
        yield central
    finally:
        await central.stop()
