"""Groups: anchored at a company or one of its sites, granting scopes over that node and below.

An application joins only groups of its own company; that is checked here, and the permission core
ignores foreign grants as well (chargenet.auth.permissions, Rule 3). A caller manages the groups its
`groups:write` reaches: all of its company's with a company-level grant, otherwise those anchored at the sites
it holds the scope on, so it cannot hand out more than it reaches; any other group is `NotFound`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import delete, false, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.auth.errors import InsufficientScope
from chargenet.domain.scopes import Scope, format_scopes, parse_scope
from chargenet.domain.tenants import validate_name
from chargenet.errors import InvalidInput, NotFound
from chargenet.ids import new_id
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.views import Instant, View
from chargenet.store.models import Application, Company, Group, GroupMember, Site


class GroupView(View):
    id: str
    company_id: str
    site_id: str | None
    name: str
    scopes: list[Scope]
    client_ids: list[str]
    created_at: Instant


def parse_scopes(values: Iterable[str]) -> frozenset[Scope]:
    scopes = frozenset(parse_scope(v) for v in values)
    if not scopes:
        raise InvalidInput("a group grants at least one scope", field="scope")
    return scopes


async def create_group(
    session: AsyncSession,
    caller: Caller,
    *,
    name: str,
    scopes: Iterable[str],
    now: datetime,
    site_id: str | None = None,
    company_id: str | None = None,
) -> GroupView:
    """A group of the caller's company (the local operator names one), anchored at the company or `site_id`."""
    if caller.company_id is not None:
        company_id = caller.company_id
        if not caller.allows(Scope.GROUPS_WRITE, company_id, site_id):
            if site_id is not None and not caller.reach(Scope.GROUPS_WRITE).covers_site(company_id, site_id):
                raise NotFound("site", site_id)
            raise InsufficientScope(Scope.GROUPS_WRITE.value)
    if company_id is None:
        raise InvalidInput("name the company", field="company")
    name = validate_name(name)
    granted = parse_scopes(scopes)
    if await session.get(Company, company_id) is None:
        raise NotFound("company", company_id)
    if site_id is not None:
        site = await session.get(Site, site_id)
        if site is None or site.company_id != company_id:
            raise NotFound("site", site_id)
    group = Group(
        id=new_id("grp"),
        company_id=company_id,
        site_id=site_id,
        name=name,
        scopes=format_scopes(granted),
        created_at=now,
    )
    session.add(group)
    await session.flush()
    return await _view(session, group)


async def _get(session: AsyncSession, caller: Caller, group_id: str) -> Group:
    group = await session.get(Group, group_id)
    if group is None or not caller.allows(Scope.GROUPS_WRITE, group.company_id, group.site_id):
        raise NotFound("group", group_id)
    return group


async def add_app(session: AsyncSession, caller: Caller, group_id: str, client_id: str) -> None:
    group = await _get(session, caller, group_id)
    app = await session.get(Application, client_id)
    if app is None or app.company_id != group.company_id:
        # An application of another company is reported as missing, not as foreign: nothing leaks.
        raise NotFound("application", client_id)
    if await session.get(GroupMember, (group_id, client_id)) is None:
        session.add(GroupMember(group_id=group_id, client_id=client_id))
        await session.flush()


async def remove_app(session: AsyncSession, caller: Caller, group_id: str, client_id: str) -> None:
    await _get(session, caller, group_id)
    member = await session.get(GroupMember, (group_id, client_id))
    if member is None:
        raise NotFound("group member", client_id)
    await session.delete(member)
    await session.flush()


async def delete_group(session: AsyncSession, caller: Caller, group_id: str) -> None:
    """Deleted in the transaction that checked the caller's reach over it."""
    group = await _get(session, caller, group_id)
    await session.execute(delete(GroupMember).where(GroupMember.group_id == group_id))
    await session.delete(group)
    await session.flush()


def _make_view(group: Group, members: Iterable[str]) -> GroupView:
    return GroupView(
        id=group.id,
        company_id=group.company_id,
        site_id=group.site_id,
        name=group.name,
        scopes=[Scope(s) for s in group.scopes.split()],
        client_ids=list(members),
        created_at=group.created_at,
    )


async def _view(session: AsyncSession, group: Group) -> GroupView:
    members = await session.scalars(
        select(GroupMember.client_id).where(GroupMember.group_id == group.id).order_by(GroupMember.client_id)
    )
    return _make_view(group, members)


async def get_group(session: AsyncSession, caller: Caller, group_id: str) -> GroupView:
    return await _view(session, await _get(session, caller, group_id))


async def list_groups(
    session: AsyncSession, caller: Caller, page: PageRequest, *, company_id: str | None = None
) -> Page[GroupView]:
    """The groups the caller may manage, ordered by id. The filter is in the query, so every page is full until
    the last."""
    query = select(Group).order_by(Group.id).limit(page.fetch)
    if caller.company_id is not None:
        company_id = caller.company_id
        reach = caller.reach(Scope.GROUPS_WRITE)
        if not reach.covers_company(company_id):
            query = query.where(Group.site_id.in_(sorted(reach.sites)) if reach.sites else false())
    if company_id is not None:
        query = query.where(Group.company_id == company_id)
    if page.after is not None:
        query = query.where(Group.id > page.after)
    rows = list(await session.scalars(query))
    members: dict[str, list[str]] = {}
    if rows:
        # One query for the whole page's members, not one per group.
        pairs = await session.execute(
            select(GroupMember.group_id, GroupMember.client_id)
            .where(GroupMember.group_id.in_([g.id for g in rows]))
            .order_by(GroupMember.group_id, GroupMember.client_id)
        )
        for group_id, client_id in pairs:
            members.setdefault(group_id, []).append(client_id)
    return page.page([_make_view(g, members.get(g.id, ())) for g in rows], lambda view: view.id)
