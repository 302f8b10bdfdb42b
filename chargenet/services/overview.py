"""What the console's overview counts for one company: read-only, one query per figure, all in the database.

"Connected" is what the edge recorded in `station_presence`; a process that died without closing its
connections leaves them marked connected until another process takes the station over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ScalarSelect, Select, func, select
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
    """Every figure in one statement: the overview is the most visited page, and each round trip costs more than
    the counting itself."""
    sites = select(Site.id).where(Site.company_id == company_id).scalar_subquery()

    def count(query: Select[Any]) -> ScalarSelect[int]:
        return query.with_only_columns(func.count()).scalar_subquery()

    row = (
        await session.execute(
            select(
                count(select(Site.id).where(Site.company_id == company_id)),
                count(select(Station.id).where(Station.site_id.in_(sites))),
                count(
                    select(StationPresence.station_id)
                    .join(Station, Station.id == StationPresence.station_id)
                    .where(Station.site_id.in_(sites), StationPresence.connected.is_(True))
                ),
                count(select(Application.client_id).where(Application.company_id == company_id)),
                count(select(Webhook.id).where(Webhook.site_id.in_(sites))),
                count(select(Webhook.id).where(Webhook.site_id.in_(sites), Webhook.enabled.is_(True))),
            )
        )
    ).one()
    return CompanyCounts(*(int(figure or 0) for figure in row))
