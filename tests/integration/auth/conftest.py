"""A real chargenet app served by uvicorn on loopback, driven over real HTTP, on SQLite and PostgreSQL.

The server runs in the test's event loop with a ManualClock, so token expiry and the revocation window
are driven by the test instead of by sleeping.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn

from chargenet.app import AppContext, create_app, open_context
from chargenet.clock import ManualClock
from chargenet.config import load_settings
from chargenet.services import applications, groups
from chargenet.services.callers import OPERATOR
from tests.factories import Tenant, make_tenant
from tests.support.in_loop import start_serving
from tests.support.ports import free_port


@dataclass
class Served:
    context: AppContext
    clock: ManualClock
    url: str
    http: httpx.AsyncClient

    @property
    def token_url(self) -> str:
        return f"{self.url}/auth/oauth2/token"

    async def app(self, company_id: str, *scopes: str, site_id: str | None = None) -> applications.Credentials:
        """A new application of `company_id`, in a new group granting `scopes` (none: in no group)."""
        async with self.context.store.transaction() as session:
            created = await applications.create_application(
                session,
                OPERATOR,
                self.context.keys.secret_hasher(),
                company_id=company_id,
                name="partner",
                now=self.clock.now(),
            )
            if scopes:
                group = await groups.create_group(
                    session,
                    OPERATOR,
                    company_id=company_id,
                    site_id=site_id,
                    name="g",
                    scopes=scopes,
                    now=self.clock.now(),
                )
                await groups.add_app(session, OPERATOR, group.id, created.client_id, now=self.clock.now())
        return created

    async def token(self, credentials: applications.Credentials) -> str:
        response = await self.http.post(
            self.token_url,
            data={"grant_type": "client_credentials"},
            auth=(credentials.client_id, credentials.client_secret),
        )
        assert response.status_code == 200, response.text
        return str(response.json()["access_token"])

    async def get(self, path: str, token: str | None = None, **params: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return await self.http.get(f"{self.url}/api/v1{path}", headers=headers, params=params)

    async def tenant(self, station_id: str) -> Tenant:
        return await make_tenant(
            self.context.store, self.context.keys, self.clock.now(), station_id=station_id, connectors=2
        )


@pytest.fixture
async def served(database_url: str, tmp_path: Path, clock: ManualClock) -> AsyncIterator[Served]:
    async with serving(database_url, tmp_path, clock) as served:
        yield served


@asynccontextmanager
async def serving(database_url: str, tmp_path: Path, clock: ManualClock, **options: object) -> AsyncIterator[Served]:
    """The app served with `options` added to its settings."""
    port = free_port()
    settings = load_settings(
        {"data_dir": str(tmp_path / "data"), "database_url": database_url, "port": port, **options}, environ={}
    )
    context = await open_context(settings, clock=clock)
    server = uvicorn.Server(
        uvicorn.Config(create_app(context), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    task = await start_serving(server)
    try:
        async with httpx.AsyncClient(timeout=10) as http:
            yield Served(context, clock, settings.public_url, http)
    finally:
        server.should_exit = True
        await task
        await context.close()
