"""The audit log: who created, changed, rotated, replayed, enabled or disabled what, when and from where.

Every use case records the changes it makes through `record_change` (who, what they did, to which row), in
the same transaction as the change, so a change and its audit record are committed together or not at all.
`target` names each kind of row once, and puts its record in the log of the company it belongs to.

A record never holds a secret: `record` refuses a detail whose key names one (a programming error, raised as
`ValueError` so tests catch it), and callers pass only what identifies the change (a role, a name, "enabled"),
never a value that grants access.

Kept 365 days (decisions.md): `AuditRetention` purges older records, hourly, like the other retention jobs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeAlias, assert_never

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.errors import NotFound
from chargenet.services.callers import Actor, ApiApplication, Caller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.views import Instant, View, like_escaped
from chargenet.store.db import LONG
from chargenet.store.models import AuditRecord
from chargenet.workers import RetentionWorker

if TYPE_CHECKING:
    from chargenet.store.models import (
        Alert,
        AlertRule,
        Application,
        Circuit,
        Company,
        GridMeter,
        Group,
        LocalAuthEntry,
        MailSettings,
        Meter,
        Operator,
        Site,
        Station,
        Webhook,
    )

log = logging.getLogger(__name__)

RETENTION = timedelta(days=365)

# Substrings of a detail key that name a secret; such a key is refused whatever its value.
_SECRET_WORDS = ("secret", "password", "token", "credential", "key")


# What the audit log records changes to; `target` names each as the log shows it.
# A string, so that importing this module builds none of their mapped classes: a command that lists companies
# imports the audit log's use cases, not every area's tables.
Audited: TypeAlias = (
    "Company | Site | Station | Meter | LocalAuthEntry | Application | Group | Operator | Webhook"
    " | AlertRule | Alert | MailSettings | Circuit | GridMeter"
)


@dataclass(frozen=True, slots=True)
class Target:
    """An object as the audit log names it: its type and id. Its record goes to the log of the company it belongs
    to: `company_id`, or else the company of its site `site_id`."""

    object_type: str
    object_id: str
    company_id: str | None = None
    site_id: str | None = None


def target(row: Audited) -> Target:
    from chargenet.store import models  # here, not with the module: a command listing companies needs none

    match row:
        case models.Company():
            return Target("company", row.id, row.id)
        case models.Site():
            return Target("site", row.id, row.company_id)
        case models.Station():
            return Target("station", row.id, site_id=row.site_id)
        case models.Meter():
            return Target("meter", row.id, site_id=row.site_id)
        case models.LocalAuthEntry():
            return Target("local list entry", f"{row.site_id}/{row.id_tag}", site_id=row.site_id)
        case models.Application():
            return Target("application", row.client_id, row.company_id)
        case models.Group():
            return Target("group", row.id, row.company_id)
        case models.Operator():
            return Target("operator", row.id, row.company_id)
        case models.Webhook():
            return Target("webhook", row.id, site_id=row.site_id)
        case models.AlertRule():
            return Target("alert rule", row.id, row.company_id)
        case models.Alert():
            return Target("alert", str(row.id), row.company_id)
        case models.MailSettings():
            return Target("mail settings", row.company_id, row.company_id)
        case models.Circuit():
            return Target("circuit", row.id, site_id=row.site_id)
        case models.GridMeter():
            return Target("meter", row.id, site_id=row.site_id)
    assert_never(row)


class AuditEntry(View):
    id: int
    company_id: str | None
    at: Instant
    actor: str
    face: str
    address: str | None
    action: str
    object_type: str
    object_id: str
    detail: dict[str, str] = {}
    # What a person calls the object now (a site's name, an operator's e-mail address); None for objects named by
    # their id (stations, meters, local list entries) and for one deleted since.
    object_name: str | None = None


@dataclass(frozen=True, slots=True)
class AuditFilter:
    """What the audit log page can be narrowed to; every field is optional and they combine with AND."""

    action: str | None = None
    object_type: str | None = None
    object_id: str | None = None
    actor: str | None = None  # a substring of who acted
    since: datetime | None = None
    until: datetime | None = None


async def record(
    session: AsyncSession,
    actor: Actor,
    *,
    company_id: str | None,
    action: str,
    object_type: str,
    object_id: str,
    now: datetime,
    detail: Mapping[str, str] | None = None,
) -> None:
    """Add one audit record to the caller's transaction."""
    detail = dict(detail or {})
    for key in detail:
        if any(word in key.lower() for word in _SECRET_WORDS):
            raise ValueError(f"audit detail {key!r} names a secret; the audit log never holds one")
    session.add(
        AuditRecord(
            company_id=company_id,
            at=now,
            actor=actor.who[:300],
            face=actor.face.value,
            address=actor.address,
            action=action,
            object_type=object_type,
            object_id=object_id,
            detail=json.dumps(detail, ensure_ascii=False, sort_keys=True),
        )
    )
    await session.flush()


async def record_change(
    session: AsyncSession,
    caller: Caller,
    action: str,
    row: Audited,
    *,
    now: datetime,
    detail: Mapping[str, str] | None = None,
) -> None:
    """The audit record of `caller`'s change `action` (`"site.create"`) to `row`, in the change's transaction."""
    from chargenet.store.models import Site

    named = target(row)
    company_id = named.company_id
    if company_id is None and named.site_id is not None:
        site = await session.get(Site, named.site_id)  # in the session already, where the caller's reach was checked
        company_id = site.company_id if site is not None else None
    await record(
        session,
        caller.actor,
        company_id=company_id,
        action=action,
        object_type=named.object_type,
        object_id=named.object_id,
        now=now,
        detail=detail,
    )


async def list_records(
    session: AsyncSession, caller: Caller, page: PageRequest, *, company_id: str, where: AuditFilter | None = None
) -> Page[AuditEntry]:
    """One company's records, newest first (by id), narrowed by `where`. A company's log is read by its own
    operators, whatever their role, by the local operator, and by its applications granted `audit-log:read` over
    the whole company (a grant at a site reads none of it: the log is the company's). Another company's log is
    `NotFound`."""
    if caller.company_id not in (None, company_id):
        raise NotFound("company", company_id)
    if isinstance(caller, ApiApplication) and not caller.reach(Scope.AUDIT_LOG_READ).covers_company(company_id):
        return Page[AuditEntry](items=[], next=None)
    where = where or AuditFilter()
    query = select(AuditRecord).where(AuditRecord.company_id == company_id)
    before = page.after_number()
    if before is not None:
        query = query.where(AuditRecord.id < before)
    if where.action:
        query = query.where(AuditRecord.action == where.action)
    if where.object_type:
        query = query.where(AuditRecord.object_type == where.object_type)
    if where.object_id:
        query = query.where(AuditRecord.object_id == where.object_id)
    if where.actor:
        query = query.where(AuditRecord.actor.ilike(f"%{like_escaped(where.actor)}%", escape="\\"))
    if where.since is not None:
        query = query.where(AuditRecord.at >= where.since)
    if where.until is not None:
        query = query.where(AuditRecord.at < where.until)
    rows = list(await session.scalars(query.order_by(AuditRecord.id.desc()).limit(page.fetch)))
    names = await _names(session, company_id, rows[: page.limit])
    return page.page(
        [_entry(row, names.get((row.object_type, row.object_id))) for row in rows], lambda entry: str(entry.id)
    )


async def _names(session: AsyncSession, company_id: str, rows: list[AuditRecord]) -> dict[tuple[str, str], str]:
    """The current names of the named objects `rows` are about, one read per kind; only the company's own objects,
    so a record can never show another company's name."""
    from chargenet.store import models  # here, not with the module: a command listing companies needs none

    wanted: dict[str, set[str]] = {}
    for row in rows:
        wanted.setdefault(row.object_type, set()).add(row.object_id)
    # kind -> (its id in the log, what a person calls it, its company)
    kinds: dict[str, tuple[Any, Any, Any]] = {
        "company": (models.Company.id, models.Company.name, models.Company.id),
        "site": (models.Site.id, models.Site.name, models.Site.company_id),
        "application": (models.Application.client_id, models.Application.name, models.Application.company_id),
        "group": (models.Group.id, models.Group.name, models.Group.company_id),
        "operator": (models.Operator.id, models.Operator.email, models.Operator.company_id),
        "webhook": (models.Webhook.id, models.Webhook.url, models.Site.company_id),
        "circuit": (models.Circuit.id, models.Circuit.name, models.Site.company_id),
    }
    names: dict[tuple[str, str], str] = {}
    for kind, (key, name, company) in kinds.items():
        if kind not in wanted:
            continue
        statement = select(key, name).where(company == company_id, key.in_(sorted(wanted[kind])))
        if kind == "webhook":
            statement = statement.join_from(models.Webhook, models.Site, models.Site.id == models.Webhook.site_id)
        elif kind == "circuit":
            statement = statement.join_from(models.Circuit, models.Site, models.Site.id == models.Circuit.site_id)
        for object_id, shown in await session.execute(statement):
            names[(kind, object_id)] = shown
    return names


async def purge(session: AsyncSession, *, now: datetime) -> int:
    """Delete records older than RETENTION; returns how many."""
    result = await session.execute(
        delete(AuditRecord).where(AuditRecord.at < now - RETENTION).execution_options(**LONG)
    )
    return int(getattr(result, "rowcount", 0) or 0)


class AuditRetention(RetentionWorker):
    """Purges audit records older than RETENTION."""

    name = "audit-retention"
    what = "old audit records"

    async def purge(self, session: AsyncSession, now: datetime) -> int:
        return await purge(session, now=now)


def _entry(row: AuditRecord, name: str | None = None) -> AuditEntry:
    return AuditEntry(
        id=row.id,
        company_id=row.company_id,
        at=row.at,
        actor=row.actor,
        face=row.face,
        address=row.address,
        action=row.action,
        object_type=row.object_type,
        object_id=row.object_id,
        detail=json.loads(row.detail),
        object_name=name,
    )
