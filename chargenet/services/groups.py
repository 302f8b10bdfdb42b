"""Groups: anchored at a company or one of its sites, granting scopes over that node and below.

An application joins only groups of its own company; that is checked here, and the permission core
ignores foreign grants as well (chargenet.auth.permissions, Rule 3).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.domain.scopes import Scope, format_scopes, parse_scope
from chargenet.errors import InvalidInput, NotFound
from chargenet.ids import new_id
from chargenet.store.models import Application, Company, Group, GroupMember, Site


@dataclass(frozen=True, slots=True)
class GroupView:
    id: str
    company_id: str
    site_id: str | None
    name: str
    scopes: tuple[Scope, ...]
    client_ids: tuple[str, ...]
    created_at: datetime


def parse_scopes(values: Iterable[str]) -> frozenset[Scope]:
    scopes = frozenset(parse_scope(v) for v in values)
    if not scopes:
        raise InvalidInput("a group grants at least one scope", field="scope")
    return scopes


async def create(
    session: AsyncSession,
    *,
    clock: Clock,
    company_id: str,
    name: str,
    scopes: Iterable[str],
    site_id: str | None = None,
) -> str:
    name = name.strip()
    if not name or len(name) > 200:
        raise InvalidInput("must be 1 to 200 characters", field="name")
    granted = parse_scopes(scopes)
    if await session.get(Company, company_id) is None:
        raise NotFound("company", company_id)
    if site_id is not None:
        site = await session.get(Site, site_id)
        if site is None or site.company_id != company_id:
            raise NotFound("site", site_id)
    group_id = new_id("grp")
    session.add(
        Group(
            id=group_id,
            company_id=company_id,
            site_id=site_id,
            name=name,
            scopes=format_scopes(granted),
            created_at=clock.now(),
        )
    )
    await session.flush()
    return group_id


async def _get(session: AsyncSession, group_id: str, company_id: str | None) -> Group:
    group = await session.get(Group, group_id)
    if group is None or (company_id is not None and group.company_id != company_id):
        raise NotFound("group", group_id)
    return group


async def add_app(session: AsyncSession, *, group_id: str, client_id: str, company_id: str | None = None) -> None:
    group = await _get(session, group_id, company_id)
    app = await session.get(Application, client_id)
    if app is None or app.company_id != group.company_id:
        # An application of another company is reported as missing, not as foreign: nothing leaks.
        raise NotFound("application", client_id)
    if await session.get(GroupMember, (group_id, client_id)) is None:
        session.add(GroupMember(group_id=group_id, client_id=client_id))
        await session.flush()


async def remove_app(session: AsyncSession, *, group_id: str, client_id: str, company_id: str | None = None) -> None:
    await _get(session, group_id, company_id)
    member = await session.get(GroupMember, (group_id, client_id))
    if member is None:
        raise NotFound("group member", client_id)
    await session.delete(member)


async def delete_group(session: AsyncSession, *, group_id: str, company_id: str | None = None) -> None:
    group = await _get(session, group_id, company_id)
    await session.execute(delete(GroupMember).where(GroupMember.group_id == group_id))
    await session.delete(group)


async def _view(session: AsyncSession, group: Group) -> GroupView:
    members = await session.scalars(
        select(GroupMember.client_id).where(GroupMember.group_id == group.id).order_by(GroupMember.client_id)
    )
    return GroupView(
        group.id,
        group.company_id,
        group.site_id,
        group.name,
        tuple(Scope(s) for s in group.scopes.split()),
        tuple(members),
        group.created_at,
    )


async def show(session: AsyncSession, *, group_id: str, company_id: str | None = None) -> GroupView:
    return await _view(session, await _get(session, group_id, company_id))


async def list_groups(session: AsyncSession, *, company_id: str | None = None) -> list[GroupView]:
    query = select(Group).order_by(Group.id)
    if company_id is not None:
        query = query.where(Group.company_id == company_id)
    return [await _view(session, g) for g in await session.scalars(query)]
