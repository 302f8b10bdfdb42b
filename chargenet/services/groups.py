"""Groups: anchored at a company or one of its sites, granting scopes over that node and below.

An application joins only groups of its own company; that is checked here, and the permission core
ignores foreign grants as well (chargenet.auth.permissions, Rule 3). A caller manages the groups its
`groups:write` reaches: all of its company's with a company-level grant, otherwise those anchored at the sites
it holds the scope on, so it cannot hand out more than it reaches; any other group is `NotFound`. A console
operator sees every group of its company; a viewer changes none (`Forbidden`).

Every change (create, edit, add or remove a member, delete) bumps the group's `version` and writes its audit
record in the caller's transaction, whichever face asked; an edit made from an older version than the stored one
is refused with `StaleChange` rather than overwriting what another operator changed meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import ColumnElement, delete, false, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.auth.errors import InsufficientScope
from chargenet.domain.scopes import Scope, format_scopes, parse_scope
from chargenet.domain.tenants import validate_name
from chargenet.errors import InvalidInput, NotFound
from chargenet.ids import new_id
from chargenet.services import audit
from chargenet.services.callers import Caller, OperatorCaller, refuse_viewer
from chargenet.services.pages import Page, PageRequest
from chargenet.services.versions import check_version
from chargenet.services.views import Instant, View
from chargenet.store.models import Application, Company, Group, GroupMember, Site

MAX_CHOICES = 500  # sites offered in one select of a form
# Applications or groups offered in one select: a company may have thousands, so a picker shows the first of those
# matching what the operator typed, by name, and says when more match.
PICKER_SIZE = 50


class GroupView(View):
    id: str
    company_id: str
    site_id: str | None
    name: str
    scopes: list[Scope]
    client_ids: list[str]
    version: int
    created_at: Instant


@dataclass(frozen=True, slots=True)
class GroupFilter:
    """What a list of groups can be narrowed to (combined with AND)."""

    name: str | None = None  # a case-insensitive part of the name
    scope: Scope | None = None  # groups granting this scope
    anchor: str | None = None  # "company" for company-level groups, or a site id
    member: str | None = None  # groups this application (client id) is in


@dataclass(frozen=True, slots=True)
class Choice:
    """An object a form offers to pick: its id and what people call it."""

    id: str
    label: str


class Keep:
    """An update leaves the field as it is."""


KEEP: Final = Keep()
COMPANY_ANCHOR = "company"


def parse_scopes(values: Iterable[str]) -> frozenset[Scope]:
    scopes = frozenset(parse_scope(v) for v in values)
    if not scopes:
        raise InvalidInput("a group grants at least one scope", field="scope")
    return scopes


async def _anchor_site(session: AsyncSession, caller: Caller, company_id: str, site_id: str | None) -> None:
    """Refuse an anchor outside the company, or one the caller's `groups:write` does not reach."""
    if caller.company_id is not None and not caller.allows(Scope.GROUPS_WRITE, company_id, site_id):
        if site_id is not None and not caller.reach(Scope.GROUPS_WRITE).covers_site(company_id, site_id):
            raise NotFound("site", site_id)
        raise InsufficientScope(Scope.GROUPS_WRITE.value)
    if site_id is not None:
        site = await session.get(Site, site_id)
        if site is None or site.company_id != company_id:
            raise NotFound("site", site_id)


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
    refuse_viewer(caller, "creating a group")
    if caller.company_id is not None:
        company_id = caller.company_id
    if company_id is None:
        raise InvalidInput("name the company", field="company")
    await _anchor_site(session, caller, company_id, site_id)
    name = validate_name(name)
    granted = parse_scopes(scopes)
    if await session.get(Company, company_id) is None:
        raise NotFound("company", company_id)
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
    await audit.record_change(session, caller, "group.create", group, now=now, detail=_settings(group))
    return await _view(session, group)


def _may_see(caller: Caller, group: Group) -> bool:
    if isinstance(caller, OperatorCaller):
        return group.company_id == caller.company_id
    return caller.allows(Scope.GROUPS_WRITE, group.company_id, group.site_id)


async def _get(session: AsyncSession, caller: Caller, group_id: str, *, change: str | None = None) -> Group:
    """The group if the caller sees it (`NotFound` otherwise); with `change` (what is asked, for the message),
    also one the caller may change."""
    group = await session.get(Group, group_id)
    if group is None or not _may_see(caller, group):
        raise NotFound("group", group_id)
    if change is not None:
        refuse_viewer(caller, change)
        if not caller.allows(Scope.GROUPS_WRITE, group.company_id, group.site_id):
            raise NotFound("group", group_id)
    return group


async def update_group(
    session: AsyncSession,
    caller: Caller,
    group_id: str,
    *,
    now: datetime,
    name: str | None = None,
    scopes: Iterable[str] | None = None,
    site_id: str | Keep | None = KEEP,
    expected_version: int | None = None,
) -> GroupView:
    """Change the name, scopes or anchor (`site_id` None: the company). A new anchor must be in the group's company
    and within the caller's reach. Raises `StaleChange` when `expected_version` is given and the group moved on."""
    group = await _get(session, caller, group_id, change="changing a group")
    check_version("group", repr(group.name), group.version, expected_version)
    new_name = validate_name(name) if name is not None else group.name
    new_scopes = format_scopes(parse_scopes(scopes)) if scopes is not None else group.scopes
    new_site = group.site_id if isinstance(site_id, Keep) else site_id
    if new_site != group.site_id:
        await _anchor_site(session, caller, group.company_id, new_site)
    if (new_name, new_scopes, new_site) != (group.name, group.scopes, group.site_id):
        group.name, group.scopes, group.site_id = new_name, new_scopes, new_site
        group.version += 1
        await session.flush()
        await audit.record_change(session, caller, "group.update", group, now=now, detail=_settings(group))
    return await _view(session, group)


async def add_app(session: AsyncSession, caller: Caller, group_id: str, client_id: str, *, now: datetime) -> GroupView:
    """Put an application of the group's company into it (already in: nothing changes)."""
    group = await _get(session, caller, group_id, change="adding an application to a group")
    app = await session.get(Application, client_id)
    if app is None or app.company_id != group.company_id:
        # An application of another company is reported as missing, not as foreign: nothing leaks.
        raise NotFound("application", client_id)
    if await session.get(GroupMember, (group_id, client_id)) is not None:
        return await _view(session, group)
    session.add(GroupMember(group_id=group_id, client_id=client_id))
    return await _members_changed(session, caller, group, "group.add-app", client_id, now)


async def remove_app(
    session: AsyncSession, caller: Caller, group_id: str, client_id: str, *, now: datetime
) -> GroupView:
    """Take an application out of the group; its tokens lose what the group granted within seconds."""
    group = await _get(session, caller, group_id, change="removing an application from a group")
    member = await session.get(GroupMember, (group_id, client_id))
    if member is None:
        raise NotFound("group member", client_id)
    await session.delete(member)
    return await _members_changed(session, caller, group, "group.remove-app", client_id, now)


async def _members_changed(
    session: AsyncSession, caller: Caller, group: Group, action: str, client_id: str, now: datetime
) -> GroupView:
    """The group once an application came in or went out: a new version, and the change in the audit log."""
    group.version += 1
    await session.flush()
    detail = {"application": client_id, "name": group.name}
    await audit.record_change(session, caller, action, group, now=now, detail=detail)
    return await _view(session, group)


async def delete_group(
    session: AsyncSession,
    caller: Caller,
    group_id: str,
    *,
    now: datetime,
    expected_version: int | None = None,
) -> None:
    """Deleted in the transaction that checked the caller's reach over it."""
    group = await _get(session, caller, group_id, change="deleting a group")
    check_version("group", repr(group.name), group.version, expected_version)
    await audit.record_change(session, caller, "group.delete", group, now=now, detail={"name": group.name})
    await session.execute(delete(GroupMember).where(GroupMember.group_id == group_id))
    await session.delete(group)
    await session.flush()


def _settings(group: Group) -> dict[str, str]:
    return {"name": group.name, "anchor": group.site_id or COMPANY_ANCHOR, "scopes": group.scopes}


def _make_view(group: Group, members: Iterable[str]) -> GroupView:
    return GroupView(
        id=group.id,
        company_id=group.company_id,
        site_id=group.site_id,
        name=group.name,
        scopes=[Scope(s) for s in group.scopes.split()],
        client_ids=list(members),
        version=group.version,
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
    session: AsyncSession,
    caller: Caller,
    page: PageRequest,
    *,
    company_id: str | None = None,
    where: GroupFilter | None = None,
) -> Page[GroupView]:
    """The groups the caller may manage (a console operator: every group of its company), ordered by id, narrowed
    by `where`. The filter is in the query, so every page is full until the last."""
    query = select(Group).order_by(Group.id).limit(page.fetch)
    if caller.company_id is not None:
        company_id = caller.company_id
        reach = caller.reach(Scope.GROUPS_WRITE)
        if not isinstance(caller, OperatorCaller) and not reach.covers_company(company_id):
            query = query.where(Group.site_id.in_(sorted(reach.sites)) if reach.sites else false())
    if company_id is not None:
        query = query.where(Group.company_id == company_id)
    if page.after is not None:
        query = query.where(Group.id > page.after)
    where = where or GroupFilter()
    if where.name:
        query = query.where(_name_contains(Group.name, where.name))
    if where.scope is not None:
        # Scopes are stored space-separated: padded on both sides, a scope matches only as a whole word.
        query = query.where((" " + Group.scopes + " ").contains(f" {where.scope.value} "))
    if where.anchor == COMPANY_ANCHOR:
        query = query.where(Group.site_id.is_(None))
    elif where.anchor:
        query = query.where(Group.site_id == where.anchor)
    if where.member:
        query = query.where(
            select(GroupMember.group_id)
            .where(GroupMember.group_id == Group.id, GroupMember.client_id == where.member)
            .exists()
        )
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


async def anchor_choices(session: AsyncSession, caller: OperatorCaller) -> list[Choice]:
    """The sites of the operator's company a group can be anchored at, by name (at most MAX_CHOICES)."""
    rows = await session.execute(
        select(Site.id, Site.name)
        .where(Site.company_id == caller.company_id)
        .order_by(Site.name, Site.id)
        .limit(MAX_CHOICES)
    )
    return [Choice(site_id, name) for site_id, name in rows]


def _name_contains(column: Any, text: str) -> ColumnElement[bool]:
    """A case-insensitive part of a name, with LIKE's wildcards taken literally."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return func.lower(column).like(f"%{escaped}%", escape="\\")


@dataclass(frozen=True, slots=True)
class Picker:
    """What a picker offers: at most PICKER_SIZE choices by name, and whether more match than it shows."""

    choices: list[Choice]
    more: bool


def _picker(rows: Iterable[tuple[str, str]]) -> Picker:
    choices = [Choice(id_, label) for id_, label in rows]
    return Picker(choices[:PICKER_SIZE], more=len(choices) > PICKER_SIZE)


async def application_choices(
    session: AsyncSession, caller: OperatorCaller, *, not_in_group: str | None = None, matching: str = ""
) -> Picker:
    """Applications of the operator's company a group could take in: not already in `not_in_group`, their name or
    client id containing `matching`."""
    query = select(Application.client_id, Application.name).where(Application.company_id == caller.company_id)
    if not_in_group is not None:
        member = select(GroupMember.client_id).where(
            GroupMember.group_id == not_in_group, GroupMember.client_id == Application.client_id
        )
        query = query.where(~member.exists())
    if matching.strip():
        query = query.where(
            _name_contains(Application.name, matching.strip()) | _name_contains(Application.client_id, matching.strip())
        )
    ordered = query.order_by(Application.name, Application.client_id).limit(PICKER_SIZE + 1)
    return _picker((client_id, name) for client_id, name in await session.execute(ordered))


async def group_choices(session: AsyncSession, caller: OperatorCaller, *, for_app: str, matching: str = "") -> Picker:
    """Groups of the operator's company that application `for_app` is not in, their name containing `matching`;
    each labelled with the scopes it grants."""
    member = select(GroupMember.group_id).where(GroupMember.group_id == Group.id, GroupMember.client_id == for_app)
    query = select(Group.id, Group.name, Group.scopes).where(Group.company_id == caller.company_id, ~member.exists())
    if matching.strip():
        query = query.where(_name_contains(Group.name, matching.strip()))
    rows = await session.execute(query.order_by(Group.name, Group.id).limit(PICKER_SIZE + 1))
    return _picker((group_id, f"{name} ({', '.join(scopes.split())})") for group_id, name, scopes in rows)


async def group_members(session: AsyncSession, caller: Caller, group_id: str, page: PageRequest) -> Page[Choice]:
    """One page of the group's applications, by client id, with their names: a group may hold thousands."""
    await _get(session, caller, group_id)
    query = (
        select(GroupMember.client_id, Application.name)
        .outerjoin(Application, Application.client_id == GroupMember.client_id)
        .where(GroupMember.group_id == group_id)
        .order_by(GroupMember.client_id)
        .limit(page.fetch)
    )
    if page.after is not None:
        query = query.where(GroupMember.client_id > page.after)
    rows = [Choice(client_id, name or client_id) for client_id, name in await session.execute(query)]
    return page.page(rows, lambda choice: choice.id)


async def application_names(session: AsyncSession, caller: OperatorCaller, client_ids: Sequence[str]) -> dict[str, str]:
    """The names of these applications of the operator's company, by client id."""
    if not client_ids:
        return {}
    rows = await session.execute(
        select(Application.client_id, Application.name).where(
            Application.company_id == caller.company_id, Application.client_id.in_(list(client_ids))
        )
    )
    return {client_id: name for client_id, name in rows}
