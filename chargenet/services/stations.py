"""Stations of a site and their charge points: create and change (`sites:write`), read (`sites:read`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.domain.tenants import StationLayout
from chargenet.errors import Conflict, InvalidInput, NotFound
from chargenet.keys import CredentialCipher, SecretHasher
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_site, site_filter
from chargenet.services.views import Instant, View
from chargenet.store.models import ChargePoint, Connector, Site, Station

AUTHORIZATION_KEY_LENGTH = (16, 40)


class StationView(View):
    id: str
    site_id: str
    charge_point_ids: list[str]
    connectors_per_charge_point: int | None
    security_profile: int
    upstream_password_set: bool
    created_at: Instant


def validate_authorization_key(password: str) -> str:
    low, high = AUTHORIZATION_KEY_LENGTH
    if not low <= len(password) <= high:
        raise InvalidInput(f"must be {low} to {high} characters, got {len(password)}", field="password")
    return password


async def create_station(
    session: AsyncSession,
    caller: Caller,
    hasher: SecretHasher,
    cipher: CredentialCipher,
    *,
    site_id: str,
    station_id: str,
    now: datetime,
    password: str | None = None,
    upstream_password: str | None = None,
    charge_points: int = 1,
    connectors: int | None = None,
) -> StationView:
    layout = StationLayout(station_id, charge_points, connectors)
    await reachable_site(session, caller, Scope.SITES_WRITE, site_id)
    if await session.get(Station, station_id) is not None:
        raise Conflict(f"station {station_id!r} already exists")
    clashing = await session.scalar(select(ChargePoint.id).where(ChargePoint.id.in_(layout.charge_point_ids)))
    if clashing is not None:
        raise Conflict(f"charge point id {clashing!r} is already taken (charge point ids are unique service-wide)")
    row = Station(
        id=station_id,
        site_id=site_id,
        password_hash=hasher.hash(validate_authorization_key(password)) if password else None,
        upstream_password=cipher.encrypt(upstream_password) if upstream_password else None,
        charge_points=layout.charge_points,
        connectors_per_charge_point=layout.connectors_per_charge_point,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    for ordinal, charge_point_id in enumerate(layout.charge_point_ids, start=1):
        session.add(ChargePoint(id=charge_point_id, station_id=station_id, site_id=site_id, ordinal=ordinal))
        for connector_id in range(1, (layout.connectors_per_charge_point or 0) + 1):
            session.add(Connector(charge_point_id=charge_point_id, connector_id=connector_id))
    await session.flush()
    return _view(row)


async def update_station(
    session: AsyncSession,
    caller: Caller,
    hasher: SecretHasher,
    cipher: CredentialCipher,
    station_id: str,
    *,
    password: str | None = None,
    upstream_password: str | None = None,
) -> StationView:
    row = await _reachable(session, caller, Scope.SITES_WRITE, station_id)
    if password is not None:
        row.password_hash = hasher.hash(validate_authorization_key(password))
    if upstream_password is not None:
        row.upstream_password = cipher.encrypt(upstream_password)
    await session.flush()
    return _view(row)


async def get_station(session: AsyncSession, caller: Caller, station_id: str) -> StationView:
    return _view(await _reachable(session, caller, Scope.SITES_READ, station_id))


async def list_stations(
    session: AsyncSession, caller: Caller, page: PageRequest, *, site_id: str | None = None
) -> Page[StationView]:
    """The stations on sites the caller reaches with `sites:read`, ordered by id."""
    query = (
        select(Station)
        .join(Site, Site.id == Station.site_id)
        .where(site_filter(caller.reach(Scope.SITES_READ)))
        .order_by(Station.id)
        .limit(page.fetch)
    )
    if site_id is not None:
        query = query.where(Station.site_id == site_id)
    if page.after is not None:
        query = query.where(Station.id > page.after)
    return page.page([_view(row) for row in await session.scalars(query)], lambda station: station.id)


async def _reachable(session: AsyncSession, caller: Caller, scope: Scope, station_id: str) -> Station:
    row = await session.get(Station, station_id)
    if row is not None:
        site = await session.get(Site, row.site_id)
        if site is not None and caller.allows(scope, site.company_id, site.id):
            return row
    raise NotFound("station", station_id)


def _view(row: Station) -> StationView:
    return StationView(
        id=row.id,
        site_id=row.site_id,
        charge_point_ids=row.layout().charge_point_ids,
        connectors_per_charge_point=row.connectors_per_charge_point,
        security_profile=1 if row.password_hash is not None else 0,
        upstream_password_set=row.upstream_password is not None,
        created_at=row.created_at,
    )
