"""Small builders for store state that many tests need."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.app import AppContext
from chargenet.keys import KeyStore
from chargenet.services import companies, sites, stations
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store


@dataclass(frozen=True)
class Tenant:
    company_id: str
    site_id: str
    station_id: str


async def make_tenant(
    store: Store,
    keys: KeyStore,
    now: datetime,
    *,
    station_id: str = "ST-1",
    charge_points: int = 1,
    connectors: int | None = None,
    password: str | None = None,
) -> Tenant:
    async with store.transaction() as session:
        company = await companies.create_company(session, OPERATOR, name="Acme Charging", now=now)
        site = await sites.create_site(
            session, OPERATOR, keys.credential_cipher(), company_id=company.id, name="Depot", now=now
        )
        await add_station(
            session,
            keys,
            site.id,
            station_id,
            now,
            password=password,
            charge_points=charge_points,
            connectors=connectors,
        )
    return Tenant(company.id, site.id, station_id)


async def add_station(
    session: AsyncSession, keys: KeyStore, site_id: str, station_id: str, now: datetime, **layout: Any
) -> None:
    """Station `station_id` of the site, as the operator creates it; `layout` as `stations.create_station` takes
    it (`password`, `charge_points`, `connectors`)."""
    await stations.create_station(
        session,
        OPERATOR,
        keys.secret_hasher(),
        keys.credential_cipher(),
        site_id=site_id,
        station_id=station_id,
        now=now,
        **layout,
    )


async def partner_token(
    context: AppContext,
    company_id: str,
    scopes: Iterable[str],
    *,
    site_id: str | None = None,
) -> str:
    """A real access token for a new application in a new group granting `scopes` over the company (or site)."""
    from chargenet.auth.token_request import AuthMethod, ClientCredentials
    from chargenet.services import applications, groups

    now = context.clock.now()
    async with context.store.transaction() as session:
        credentials = await applications.create_application(
            session, OPERATOR, context.keys.secret_hasher(), company_id=company_id, name="Partner", now=now
        )
        group = await groups.create_group(
            session, OPERATOR, company_id=company_id, site_id=site_id, name="Partner access", scopes=scopes, now=now
        )
        await groups.add_app(session, OPERATOR, group.id, credentials.client_id, now=now)
    assert context.auth is not None
    issued = await context.auth.grant(
        ClientCredentials(credentials.client_id, credentials.client_secret, AuthMethod.BASIC), None
    )
    return issued.access_token
