"""What the console's overview counts for one company: read-only, one query per figure, all in the database.

"Connected" is what the edge recorded in `station_presence`; a process that died without closing its
connections leaves them marked connected until another process takes the station over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.store.models import Application, Site, Station, StationPresence, Webhook


@dataclass(frozen=True, slots=True)
class CompanyCounts:
    sites: int
    stations: int
    connected_stations: int
    applications: int
    webhooks: int
    enabled_webhooks: int


async def company_counts(session: AsyncSession, company_id: str) -> CompanyCounts:
    sites = select(Site.id).where(Site.company_id == company_id).scalar_subquery()

    async def count(query: Select[Any]) -> int:
        return int(await session.scalar(query) or 0)

    return CompanyCounts(
        sites=await count(select(func.count()).select_from(Site).where(Site.company_id == company_id)),
        stations=await count(select(func.count()).select_from(Station).where(Station.site_id.in_(sites))),
        connected_stations=await count(
            select(func.count())
            .select_from(StationPresence)
            .join(Station, Station.id == StationPresence.station_id)
            .where(Station.site_id.in_(sites), StationPresence.connected.is_(True))
        ),
        applications=await count(
            select(func.count()).select_from(Application).where(Application.company_id == company_id)
        ),
        webhooks=await count(select(func.count()).select_from(Webhook).where(Webhook.site_id.in_(sites))),
        enabled_webhooks=await count(
            select(func.count()).select_from(Webhook).where(Webhook.site_id.in_(sites), Webhook.enabled.is_(True))
        ),
    )
