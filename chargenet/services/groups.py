"""Groups: anchored at a company or one of its sites, granting scopes over that node and below.

An application joins only groups of its own company; that is checked here, and the permission core
ignores foreign grants as well (chargenet.auth.permissions, Rule 3).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, false, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope, format_scopes, parse_scope
from chargenet.domain.tenants import validate_name
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

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "companyId": self.company_id,
            "siteId": self.site_id,
            "name": self.name,
            "scopes": [s.value for s in self.scopes],
            "clientIds": list(self.client_ids),
            "createdAt": self.created_at.isoformat(),
        }


def parse_scopes(values: Iterable[str]) -> frozenset[Scope]:
    scopes = frozenset(parse_scope(v) for v in values)
    if not scopes:
        raise InvalidInput("a group grants at least one scope", field="scope")
    return scopes


async def create_group(
    session: AsyncSession,
    *,
    company_id: str,
    name: str,
    scopes: Iterable[str],
    now: datetime,
    site_id: str | None = None,
) -> GroupView:
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


async def _get(session: AsyncSession, group_id: str, company_id: str | None) -> Group:
    group = await session.get(Group, group_id)
    if group is None or (company_id is not None and group.company_id != company_id):
        raise NotFound("group", group_id)
    return group


async def add_app(session: AsyncSession, group_id: str, client_id: str, *, company_id: str | None = None) -> None:
    group = await _get(session, group_id, company_id)
    app = await session.get(Application, client_id)
    if app is None or app.company_id != group.company_id:
        # An application of another company is reported as missing, not as foreign: nothing leaks.
        raise NotFound("application", client_id)
    if await session.get(GroupMember, (group_id, client_id)) is None:
        session.add(GroupMember(group_id=group_id, client_id=client_id))
        await session.flush()


async def remove_app(session: AsyncSession, group_id: str, client_id: str, *, company_id: str | None = None) -> None:
    await _get(session, group_id, company_id)
    member = await session.get(GroupMember, (group_id, client_id))
    if member is None:
        raise NotFound("group member", client_id)
    await session.delete(member)
    await session.flush()


async def delete_group(session: AsyncSession, group_id: str, *, company_id: str | None = None) -> None:
    group = await _get(session, group_id, company_id)
    await session.execute(delete(GroupMember).where(GroupMember.group_id == group_id))
    await session.delete(group)
    await session.flush()


def _make_view(group: Group, members: Iterable[str]) -> GroupView:
    return GroupView(
        group.id,
        group.company_id,
        group.site_id,
        group.name,
        tuple(Scope(s) for s in group.scopes.split()),
        tuple(members),
        group.created_at,
    )


async def _view(session: AsyncSession, group: Group) -> GroupView:
    members = await session.scalars(
        select(GroupMember.client_id).where(GroupMember.group_id == group.id).order_by(GroupMember.client_id)
    )
    return _make_view(group, members)


async def get_group(session: AsyncSession, group_id: str, *, company_id: str | None = None) -> GroupView:
    return await _view(session, await _get(session, group_id, company_id))


async def list_groups(
    session: AsyncSession,
    *,
    company_id: str | None = None,
    site_ids: Collection[str] | None = None,
    limit: int | None = None,
    after: str | None = None,
) -> list[GroupView]:
    """Groups ordered by id, from just after `after`, at most `limit` of them. With `site_ids`, only
    groups anchored at one of those sites (what a caller holding site-level grants may see)."""
    query = select(Group).order_by(Group.id)
    if company_id is not None:
        query = query.where(Group.company_id == company_id)
    if site_ids is not None:
        query = query.where(Group.site_id.in_(sorted(site_ids)) if site_ids else false())
    if after is not None:
        query = query.where(Group.id > after)
    if limit is not None:
        query = query.limit(limit)
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
    return [_make_view(g, members.get(g.id, ())) for g in rows]
