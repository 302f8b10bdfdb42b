"""Small builders for store state that many tests need."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.app import AppContext
from chargenet.keys import KeyStore
from chargenet.services import companies, sites, stations, webhooks
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.webhooks.outbound_auth import NoAuth


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


def edge_row(n: int, site_id: str, start: datetime, **values: Any) -> dict[str, Any]:
    """Session `n` of station CS-1 (OCPP), accepted at `start` and stopped 90 minutes later; `values` override
    its columns. A row to insert into `EdgeTransaction`."""
    row = {
        "id": n,
        "station_id": "CS-1",
        "site_id": site_id,
        "charge_point_id": "CS-1",
        "connector_id": 1,
        "ocpp_connector_id": 1,
        "id_tag": f"TAG-{n}",
        "started_at": start,
        "meter_start": 1000,
        "auth_status": "Accepted",
        "stopped_at": start + timedelta(minutes=90),
        "meter_stop": 13345,
        "stop_reason": "EVDisconnected",
        "created_at": start,
    }
    return {**row, **values}


def meter_row(n: int, site_id: str, start: datetime, **values: Any) -> dict[str, Any]:
    """Session `n` found by a meter of station CS-M, started at `start` and not stopped; `values` override its
    columns. A row to insert into `MeterSession`."""
    row = {
        "transaction_id": n,
        "meter_id": None,
        "site_id": site_id,
        "station_id": "CS-M",
        "charge_point_id": "CS-M",
        "connector_id": 1,
        "id_tag": f"METER-{n}",
        "meter_start_wh": 500,
        "started_at": start,
        "last_charging_wh": 2500,
        "last_charging_at": start + timedelta(minutes=5),
        "meter_stop_wh": None,
        "stopped_at": None,
        "reason": None,
    }
    return {**row, **values}


async def partner_token(
    context: AppContext,
    company_id: str,
    scopes: Iterable[str],
    *,
    site_id: str | None = None,
) -> str:
    """A real access token for a new application in a new group granting `scopes` over the company (or site)."""
    _, token = await partner_application(context, company_id, scopes, site_id=site_id)
    return token


async def partner_application(
    context: AppContext,
    company_id: str,
    scopes: Iterable[str],
    *,
    site_id: str | None = None,
) -> tuple[str, str]:
    """A new application in a new group granting `scopes` over the company (or site): its client id and a real
    access token of it."""
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
    return credentials.client_id, issued.access_token


async def add_webhook(
    transactions: Any,
    cipher: Any,
    site_id: str,
    now: datetime,
    *,
    url: str = "http://127.0.0.1:9/hook",
    event_types: Iterable[str] = ("Authorize",),
) -> webhooks.WebhookView:
    """A webhook of the site as the operator creates it, without authentication, to a loopback URL (allowed here)."""
    return await webhooks.create_webhook(
        transactions,
        OPERATOR,
        cipher,
        site_id=site_id,
        url=url,
        event_types=list(event_types),
        auth=NoAuth(),
        now=now,
        allow_private=True,
    )
