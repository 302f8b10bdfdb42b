"""A caller's reach, as use cases check it: in the WHERE clause for lists, and as `NotFound` for one object.

An object of another company, or outside the caller's groups, is reported exactly like one that does not exist
(decisions.md §4), so no face can tell them apart, and none has to remember to.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from sqlalchemy import ColumnElement, false, or_, true
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.auth.permissions import Reach
from chargenet.domain.scopes import Scope
from chargenet.errors import Forbidden, NotFound
from chargenet.services.callers import Caller, OperatorCaller, refuse_viewer
from chargenet.store.models import Company, Site, Station, Webhook


def site_filter(reach: Reach) -> ColumnElement[bool]:
    """Rows of `Site` the reach covers (join `Site` to filter other tables)."""
    if reach.everything:
        return true()
    clauses = []
    if reach.companies:
        clauses.append(Site.company_id.in_(sorted(reach.companies)))
    if reach.sites:
        clauses.append(Site.id.in_(sorted(reach.sites)))
    return or_(*clauses) if clauses else false()


class OnSite(Protocol):
    """An object that belongs to a site: a station, a charge point, a meter, a transaction."""

    @property
    def site_id(self) -> str: ...


Row = TypeVar("Row", bound=OnSite)


async def reachable_site(session: AsyncSession, caller: Caller, scope: Scope, site_id: str) -> Site:
    """The site, if `scope` holds there for the caller; `NotFound` otherwise, whether or not it exists."""
    site = await session.get(Site, site_id)
    if site is None:
        raise NotFound("site", site_id)
    _check(caller, scope, site.company_id, site.id, NotFound("site", site_id))
    return site


async def reachable_on_site(
    session: AsyncSession, caller: Caller, scope: Scope, row: Row | None, missing: NotFound
) -> Row:
    """`row`, looked up by an id the caller gave, if `scope` holds on its site for the caller; `missing` otherwise,
    for no row as for one out of reach. Its site is then in the session (`session.get(Site, ...)` reads no row)."""
    site = await session.get(Site, row.site_id) if row is not None else None
    if row is None or site is None:
        raise missing
    _check(caller, scope, site.company_id, site.id, missing)
    return row


async def site_of(session: AsyncSession, row: OnSite) -> Site:
    """The site of `row`, which `reachable_on_site` found within reach (so it is in the session: no read)."""
    site = await session.get(Site, row.site_id)
    assert site is not None, "a row within reach has its site"
    return site


async def reachable_station(session: AsyncSession, caller: Caller, scope: Scope, station_id: str) -> Station:
    """The station, if `scope` holds on its site for the caller; `NotFound` otherwise, whether or not it exists."""
    station = await session.get(Station, station_id)
    return await reachable_on_site(session, caller, scope, station, NotFound("station", station_id))


async def reachable_company(session: AsyncSession, caller: Caller, scope: Scope, company_id: str) -> Company:
    """The company, if `scope` holds on the company itself (a company-level grant); `NotFound` otherwise."""
    company = await session.get(Company, company_id)
    if company is None:
        raise NotFound("company", company_id)
    _check(caller, scope, company.id, None, NotFound("company", company_id))
    return company


async def reachable_webhook(
    session: AsyncSession, caller: Caller, scope: Scope, webhook_id: str, *, change: str | None = None
) -> Webhook:
    """The webhook, if `scope` holds on its site for the caller; `NotFound` otherwise. With `change` (what is
    asked, for the message), a console viewer who sees the webhook is refused with `Forbidden`."""
    row = await session.get(Webhook, webhook_id)
    if row is not None:
        site = await session.get(Site, row.site_id)
        if site is not None and change is not None and caller.allows(Scope.WEBHOOKS_READ, site.company_id, site.id):
            refuse_viewer(caller, change)
        if site is not None and caller.allows(scope, site.company_id, site.id):
            return row
    raise NotFound("webhook", webhook_id)


def _check(caller: Caller, scope: Scope, company_id: str, site_id: str | None, missing: NotFound) -> None:
    refuse_read_only(caller, scope, company_id)
    if not caller.allows(scope, company_id, site_id):
        raise missing


def refuse_read_only(caller: Caller, scope: Scope, company_id: str) -> None:
    """A console operator of the company whose role only reads (a viewer) sees the object, so a change is
    `Forbidden` (403) rather than `NotFound`: the object's existence is no secret from them."""
    if (
        isinstance(caller, OperatorCaller)
        and company_id == caller.company_id
        and not scope.value.endswith(":read")
        and not caller.may_change
    ):
        raise Forbidden(f"changing this needs the admin role; you are {caller.role.value}")
