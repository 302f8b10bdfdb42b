"""A caller's reach, as use cases check it: in the WHERE clause for lists, and as `NotFound` for one object.

An object of another company, or outside the caller's groups, is reported exactly like one that does not exist
(decisions.md §4), so no face can tell them apart, and none has to remember to.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, false, or_, true
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.auth.permissions import Reach
from chargenet.domain.scopes import Scope
from chargenet.errors import Forbidden, NotFound
from chargenet.services.callers import Caller, OperatorCaller, refuse_viewer
from chargenet.store.models import Company, Site, Webhook


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


async def reachable_site(session: AsyncSession, caller: Caller, scope: Scope, site_id: str) -> Site:
    """The site, if `scope` holds there for the caller; `NotFound` otherwise, whether or not it exists."""
    site = await session.get(Site, site_id)
    if site is None:
        raise NotFound("site", site_id)
    refuse_read_only(caller, scope, site.company_id)
    if not caller.allows(scope, site.company_id, site.id):
        raise NotFound("site", site_id)
    return site


async def reachable_company(session: AsyncSession, caller: Caller, scope: Scope, company_id: str) -> Company:
    """The company, if `scope` holds on the company itself (a company-level grant); `NotFound` otherwise."""
    company = await session.get(Company, company_id)
    if company is None:
        raise NotFound("company", company_id)
    refuse_read_only(caller, scope, company.id)
    if not caller.allows(scope, company.id):
        raise NotFound("company", company_id)
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
