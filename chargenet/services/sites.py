from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.tenants import validate_name
from chargenet.errors import InvalidInput, NotFound
from chargenet.ids import new_id
from chargenet.keys import CredentialCipher
from chargenet.store.models import Company, Site


@dataclass(frozen=True, slots=True)
class SiteView:
    id: str
    company_id: str
    name: str
    upstream_url: str | None
    has_upstream_password: bool
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "companyId": self.company_id,
            "name": self.name,
            "upstreamUrl": self.upstream_url,
            "upstreamPasswordSet": self.has_upstream_password,
            "createdAt": self.created_at.isoformat(),
        }


def _view(row: Site) -> SiteView:
    return SiteView(
        row.id, row.company_id, row.name, row.upstream_url, row.upstream_password is not None, row.created_at
    )


def validate_upstream_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname or parts.query or parts.fragment:
        raise InvalidInput(f"{url!r} is not a ws:// or wss:// URL without query or fragment", field="upstream-url")
    return url.rstrip("/")


async def create_site(
    session: AsyncSession,
    cipher: CredentialCipher,
    *,
    company_id: str,
    name: str,
    now: datetime,
    upstream_url: str | None = None,
    upstream_password: str | None = None,
) -> SiteView:
    if await session.get(Company, company_id) is None:
        raise NotFound("company", company_id)
    row = Site(
        id=new_id("site"),
        company_id=company_id,
        name=validate_name(name),
        upstream_url=validate_upstream_url(upstream_url) if upstream_url else None,
        upstream_password=cipher.encrypt(upstream_password) if upstream_password else None,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    return _view(row)


async def update_site(
    session: AsyncSession,
    cipher: CredentialCipher,
    site_id: str,
    *,
    name: str | None = None,
    upstream_url: str | None = None,
    remove_upstream: bool = False,
    upstream_password: str | None = None,
) -> SiteView:
    row = await _get(session, site_id)
    if name is not None:
        row.name = validate_name(name)
    if remove_upstream:
        row.upstream_url = None
        row.upstream_password = None
    elif upstream_url is not None:
        row.upstream_url = validate_upstream_url(upstream_url)
    if upstream_password is not None:
        row.upstream_password = cipher.encrypt(upstream_password)
    await session.flush()
    return _view(row)


async def get_site(session: AsyncSession, site_id: str) -> SiteView:
    return _view(await _get(session, site_id))


async def list_sites(session: AsyncSession, *, company_id: str | None = None) -> list[SiteView]:
    query = select(Site).order_by(Site.created_at, Site.id)
    if company_id is not None:
        query = query.where(Site.company_id == company_id)
    return [_view(row) for row in await session.scalars(query)]


async def _get(session: AsyncSession, site_id: str) -> Site:
    row = await session.get(Site, site_id)
    if row is None:
        raise NotFound("site", site_id)
    return row
