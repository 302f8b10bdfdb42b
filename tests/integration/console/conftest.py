"""The console in-process: the sub-app mounted at /console as the composition root mounts it, on a scratch SQLite
store (a copy of the run's template), driven through httpx's ASGI transport with a ManualClock and a cheap argon2
profile."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from chargenet.clock import ManualClock
from chargenet.console.app import create_console
from chargenet.console.pages import Console
from chargenet.keys import KeyStore
from chargenet.services import audit, companies, meters, operators, sites, stations
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import PageRequest
from chargenet.store import schema
from chargenet.store.db import Store
from tests.support import operators as operator_support
from tests.support.operators import PASSWORD, add_operator
from tests.support.templates import copy_sqlite_template

BRUSSELS = ZoneInfo("Europe/Brussels")  # the team's company's zone, as every company's by default
PUBLIC_URL = "http://console.test"
ORIGIN = {"Origin": PUBLIC_URL}


@dataclass
class Team:
    company_id: str
    owner: operators.OperatorView
    admin: operators.OperatorView
    viewer: operators.OperatorView
    other_company_id: str
    stranger: operators.OperatorView  # an owner of the other company


@dataclass
class ConsoleHarness:
    store: Store
    clock: ManualClock
    console: Console
    app: Starlette
    team: Team
    client: Callable[..., httpx.AsyncClient]

    async def signed_in(self, email: str, password: str = PASSWORD, address: str = "192.0.2.10") -> httpx.AsyncClient:
        client = self.client(address)
        response = await client.post("/console/login", data={"email": email, "password": password}, headers=ORIGIN)
        assert response.status_code == 303, response.text
        return client


def wall(instant: datetime, seconds: bool = True) -> str:
    """`instant` as a `datetime-local` field of a Brussels reader holds it."""
    return instant.astimezone(BRUSSELS).strftime("%Y-%m-%dT%H:%M:%S" if seconds else "%Y-%m-%dT%H:%M")


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "no CSRF token in the page"
    return found.group(1)


async def token_of(client: httpx.AsyncClient) -> str:
    """The CSRF token of `client`'s session, read from a page every operator may open."""
    return csrf_of((await client.get("/console/account/password")).text)


async def post(client: httpx.AsyncClient, path: str, data: dict[str, str] | None = None) -> httpx.Response:
    """A form posted as the browser posts it: with the session's CSRF token, from the console's origin."""
    return await client.post(path, data={**(data or {}), "csrf_token": await token_of(client)}, headers=ORIGIN)


async def records(harness: ConsoleHarness, **where: str) -> list[audit.AuditEntry]:
    """The audit records of the team's company that match `where` (an `audit.AuditFilter`), newest first."""
    async with harness.store.transaction() as session:
        found = await audit.list_records(
            session, OPERATOR, PageRequest(200), company_id=harness.team.company_id, where=audit.AuditFilter(**where)
        )
    return found.items


async def make_site(harness: ConsoleHarness, company_id: str, name: str = "Depot", **kwargs: str) -> sites.SiteView:
    async with harness.store.transaction() as session:
        return await sites.create_site(
            session,
            OPERATOR,
            harness.console.credential_cipher,  # type: ignore[arg-type]
            company_id=company_id,
            name=name,
            now=harness.clock.now(),
            **kwargs,
        )


async def make_station(harness: ConsoleHarness, site_id: str, station_id: str, **kwargs: object) -> None:
    async with harness.store.transaction() as session:
        await stations.create_station(
            session,
            OPERATOR,
            harness.console.secret_hasher,  # type: ignore[arg-type]
            harness.console.credential_cipher,  # type: ignore[arg-type]
            site_id=site_id,
            station_id=station_id,
            now=harness.clock.now(),
            **kwargs,  # type: ignore[arg-type]
        )


async def site_with_station(harness: ConsoleHarness, company_id: str, station_id: str, connectors: int = 4) -> str:
    """A new site "Depot" of the company with one station of `connectors` connectors: the site's id."""
    site = await make_site(harness, company_id)
    await make_station(harness, site.id, station_id, connectors=connectors)
    return site.id


async def make_meter(
    harness: ConsoleHarness, site_id: str, station_id: str, unit: int, tcp: str = "192.0.2.7:502", **kwargs: object
) -> str:
    """A new SDM630 meter, Modbus unit `unit` at `tcp`, of the station: its id."""
    async with harness.store.transaction() as session:
        created = await meters.create_meter(
            session,
            OPERATOR,
            site_id=site_id,
            station_id=station_id,
            profile="sdm630",
            unit_id=unit,
            tcp=tcp,
            now=harness.clock.now(),
            **kwargs,  # type: ignore[arg-type]
        )
    return created.id


@pytest.fixture(scope="session")
def cheap_passwords() -> operators.Passwords:
    return operator_support.cheap_passwords()


@pytest.fixture
async def harness(
    tmp_path: Path, clock: ManualClock, cheap_passwords: operators.Passwords
) -> AsyncIterator[ConsoleHarness]:
    copy_sqlite_template(tmp_path / "console.db")  # a copy of the run's migrated store, not a migration of its own
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'console.db'}")
    await schema.prepare_schema(store)  # a check: the copy is at the latest schema already

    async def make(company_id: str, email: str, role: str) -> operators.OperatorView:
        return await add_operator(
            store.transaction, cheap_passwords, clock.now(), company_id=company_id, email=email, role=role
        )

    async with store.transaction() as session:
        acme = await companies.create_company(session, OPERATOR, name="Acme", now=clock.now())
        other = await companies.create_company(session, OPERATOR, name="Other", now=clock.now())
    team = Team(
        acme.id,
        await make(acme.id, "owner@acme.test", "owner"),
        await make(acme.id, "admin@acme.test", "admin"),
        await make(acme.id, "viewer@acme.test", "viewer"),
        other.id,
        await make(other.id, "owner@other.test", "owner"),
    )
    keys = KeyStore(tmp_path / "keys")
    keys.ensure()
    console = Console(
        store.transaction,
        clock,
        PUBLIC_URL,
        cheap_passwords,
        secret_hasher=keys.secret_hasher(),
        read=store.read,
        credential_cipher=keys.credential_cipher(),
    )
    app = Starlette(routes=[Mount("/console", app=create_console(console))])
    clients: list[httpx.AsyncClient] = []

    def client(address: str = "192.0.2.10") -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=app, client=(address, 40000))
        made = httpx.AsyncClient(transport=transport, base_url=PUBLIC_URL)
        clients.append(made)
        return made

    try:
        yield ConsoleHarness(store, clock, console, app, team, client)
    finally:
        for made in clients:
            await made.aclose()
        await store.dispose()
