"""Sites of a company: create and change them (`sites:write`), read them (`sites:read`)."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.domain.tenants import validate_name
from chargenet.errors import InvalidInput, NotFound
from chargenet.ids import new_id
from chargenet.keys import CredentialCipher
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_company, reachable_site, site_filter
from chargenet.services.views import Instant, View
from chargenet.store.models import Site


class SiteView(View):
    id: str
    company_id: str
    name: str
    upstream_url: str | None
    upstream_password_set: bool
    created_at: Instant


def _view(row: Site) -> SiteView:
    return SiteView(
        id=row.id,
        company_id=row.company_id,
        name=row.name,
        upstream_url=row.upstream_url,
        upstream_password_set=row.upstream_password is not None,
        created_at=row.created_at,
    )


def validate_upstream_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname or parts.query or parts.fragment:
        raise InvalidInput(f"{url!r} is not a ws:// or wss:// URL without query or fragment", field="upstream-url")
    return url.rstrip("/")


async def create_site(
    session: AsyncSession,
    caller: Caller,
    cipher: CredentialCipher,
    *,
    company_id: str,
    name: str,
    now: datetime,
    upstream_url: str | None = None,
    upstream_password: str | None = None,
) -> SiteView:
    """A new site of `company_id`; needs `sites:write` on the company itself."""
    await reachable_company(session, caller, Scope.SITES_WRITE, company_id)
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
    caller: Caller,
    cipher: CredentialCipher,
    site_id: str,
    *,
    name: str | None = None,
    upstream_url: str | None = None,
    remove_upstream: bool = False,
    upstream_password: str | None = None,
) -> SiteView:
    row = await reachable_site(session, caller, Scope.SITES_WRITE, site_id)
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


async def get_site(session: AsyncSession, caller: Caller, site_id: str) -> SiteView:
    return _view(await reachable_site(session, caller, Scope.SITES_READ, site_id))


async def list_sites(
    session: AsyncSession, caller: Caller, page: PageRequest, *, company_id: str | None = None
) -> Page[SiteView]:
    """The sites the caller reaches with `sites:read`, ordered by id."""
    query = select(Site).where(site_filter(caller.reach(Scope.SITES_READ))).order_by(Site.id).limit(page.fetch)
    if company_id is not None:
        query = query.where(Site.company_id == company_id)
    if page.after is not None:
        query = query.where(Site.id > page.after)
    rows = [_view(row) for row in await session.scalars(query)]
    return page.page(rows, lambda site: site.id)


async def site_company(session: AsyncSession, site_id: str) -> str:
    site = await session.get(Site, site_id)
    if site is None:
        raise NotFound("site", site_id)
    return site.company_id
