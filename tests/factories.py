"""Small builders for store state that many tests need."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chargenet.keys import KeyStore
from chargenet.services import companies, sites, stations
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
        company = await companies.create_company(session, name="Acme Charging", now=now)
        site = await sites.create_site(session, keys.credential_cipher(), company_id=company.id, name="Depot", now=now)
        await stations.create_station(
            session,
            keys.secret_hasher(),
            keys.credential_cipher(),
            site_id=site.id,
            station_id=station_id,
            now=now,
            password=password,
            charge_points=charge_points,
            connectors=connectors,
        )
    return Tenant(company.id, site.id, station_id)
