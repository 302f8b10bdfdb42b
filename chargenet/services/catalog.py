"""Read models for partners: the sites and charge points an application's groups reach.

Filters come from `chargenet.auth.permissions.Reach`, so a query never returns what the caller may not
see: tenant isolation is in the WHERE clause, not in code that runs after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, false, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.auth.permissions import Reach
from chargenet.store.models import ChargePoint, Connector, Site


@dataclass(frozen=True, slots=True)
class ConnectorView:
    connector_id: int
    status: str | None
    error_code: str | None
    info: str | None
    status_at: datetime | None

    def to_json(self) -> dict[str, Any]:
        return {
            "connectorId": self.connector_id,
            "status": self.status,
            "errorCode": self.error_code,
            "info": self.info,
            "statusAt": self.status_at.isoformat() if self.status_at else None,
        }


@dataclass(frozen=True, slots=True)
class ChargePointView:
    id: str
    site_id: str
    station_id: str
    connectors: tuple[ConnectorView, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "siteId": self.site_id,
            "stationId": self.station_id,
            "connectors": [c.to_json() for c in self.connectors],
        }


@dataclass(frozen=True, slots=True)
class PartnerSiteView:
    id: str
    company_id: str
    name: str
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "companyId": self.company_id,
            "name": self.name,
            "createdAt": self.created_at.isoformat(),
        }


def _site_filter(reach: Reach) -> ColumnElement[bool]:
    clauses = []
    if reach.companies:
        clauses.append(Site.company_id.in_(sorted(reach.companies)))
    if reach.sites:
        clauses.append(Site.id.in_(sorted(reach.sites)))
    return or_(*clauses) if clauses else false()


async def list_sites(session: AsyncSession, reach: Reach, *, limit: int, after: str | None) -> list[PartnerSiteView]:
    query = select(Site).where(_site_filter(reach)).order_by(Site.id).limit(limit)
    if after is not None:
        query = query.where(Site.id > after)
    return [PartnerSiteView(s.id, s.company_id, s.name, s.created_at) for s in await session.scalars(query)]


async def get_site(session: AsyncSession, reach: Reach, site_id: str) -> PartnerSiteView | None:
    site = await session.scalar(select(Site).where(Site.id == site_id, _site_filter(reach)))
    return PartnerSiteView(site.id, site.company_id, site.name, site.created_at) if site else None


async def _with_connectors(session: AsyncSession, rows: list[ChargePoint]) -> list[ChargePointView]:
    if not rows:
        return []
    connectors = await session.scalars(
        select(Connector)
        .where(Connector.charge_point_id.in_([r.id for r in rows]))
        .order_by(Connector.charge_point_id, Connector.connector_id)
    )
    by_cp: dict[str, list[ConnectorView]] = {}
    for c in connectors:
        by_cp.setdefault(c.charge_point_id, []).append(
            ConnectorView(c.connector_id, c.status, c.error_code, c.info, c.status_at)
        )
    return [ChargePointView(r.id, r.site_id, r.station_id, tuple(by_cp.get(r.id, ()))) for r in rows]


async def list_charge_points(
    session: AsyncSession, reach: Reach, *, limit: int, after: str | None, site_id: str | None = None
) -> list[ChargePointView]:
    query = (
        select(ChargePoint)
        .join(Site, Site.id == ChargePoint.site_id)
        .where(_site_filter(reach))
        .order_by(ChargePoint.id)
        .limit(limit)
    )
    if site_id is not None:
        query = query.where(ChargePoint.site_id == site_id)
    if after is not None:
        query = query.where(ChargePoint.id > after)
    return await _with_connectors(session, list(await session.scalars(query)))


async def get_charge_point(session: AsyncSession, reach: Reach, charge_point_id: str) -> ChargePointView | None:
    row = await session.scalar(
        select(ChargePoint)
        .join(Site, Site.id == ChargePoint.site_id)
        .where(ChargePoint.id == charge_point_id, _site_filter(reach))
    )
    views = await _with_connectors(session, [row] if row else [])
    return views[0] if views else None
