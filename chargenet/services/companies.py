"""Companies, the top of the tenant tree. Only the store's operator creates them; an application sees its own.

A company's time zone (an IANA name, Europe/Brussels unless set) is the zone its console shows times, date filters
and days in, for each operator who chose none of their own; its owners and the store's operator change it. It
changes nothing that partners receive: events are written in Europe/Brussels, as the specification says.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.local_time import DEFAULT_ZONE, zone_named
from chargenet.domain.tenants import validate_name
from chargenet.errors import Forbidden, InvalidInput, NotFound
from chargenet.ids import new_id
from chargenet.services import audit
from chargenet.services.callers import Caller, LocalOperator, OperatorCaller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.views import Instant, View
from chargenet.store.models import Company


class CompanyView(View):
    id: str
    name: str
    time_zone: str
    organisation_name: str | None  # the O its profile 3 stations' certificates must name, when set
    created_at: Instant


def _view(row: Company) -> CompanyView:
    return CompanyView(
        id=row.id,
        name=row.name,
        time_zone=row.time_zone,
        organisation_name=row.organisation_name,
        created_at=row.created_at,
    )


async def create_company(
    session: AsyncSession, caller: Caller, *, name: str, now: datetime, time_zone: str = DEFAULT_ZONE
) -> CompanyView:
    if caller.company_id is not None:
        raise Forbidden("companies are created by the operator of the service")
    zone = zone_named(time_zone).key
    row = Company(id=new_id("co"), name=validate_name(name), time_zone=zone, created_at=now)
    session.add(row)
    await session.flush()
    detail = {"name": row.name, "time_zone": zone}
    await audit.record_change(session, caller, "company.create", row, now=now, detail=detail)
    return _view(row)


async def set_time_zone(
    session: AsyncSession, caller: Caller, company_id: str, *, time_zone: str, now: datetime
) -> CompanyView:
    """Set the company's zone: its owners in the console, the store's operator on the command line."""
    row = await session.get(Company, company_id)
    if row is None or caller.company_id not in (None, row.id):
        raise NotFound("company", company_id)
    if not (isinstance(caller, LocalOperator) or (isinstance(caller, OperatorCaller) and caller.may_manage_operators)):
        raise Forbidden("only an owner changes the company's time zone")
    zone = zone_named(time_zone).key
    if zone != row.time_zone:
        before, row.time_zone = row.time_zone, zone
        await session.flush()
        detail = {"from": before, "to": zone}
        await audit.record_change(session, caller, "company.set-time-zone", row, now=now, detail=detail)
    return _view(row)


async def set_organisation_name(
    session: AsyncSession, caller: Caller, company_id: str, *, organisation_name: str, now: datetime
) -> CompanyView:
    """Set the O that profile 3 stations' certificates must name ("" removes it, and O is not checked): an owner's
    act, as it decides which stations get in."""
    row = await session.get(Company, company_id)
    if row is None or caller.company_id not in (None, row.id):
        raise NotFound("company", company_id)
    if not (isinstance(caller, LocalOperator) or (isinstance(caller, OperatorCaller) and caller.may_manage_operators)):
        raise Forbidden("only an owner changes the company's organisation name")
    name = organisation_name.strip()
    if len(name) > 64 or not name.isprintable():
        raise InvalidInput("must be printable text of at most 64 characters", field="organisation-name")
    if (name or None) != row.organisation_name:
        before, row.organisation_name = row.organisation_name, name or None
        await session.flush()
        detail = {"from": before or "none", "to": name or "none"}
        await audit.record_change(session, caller, "company.set-organisation-name", row, now=now, detail=detail)
    return _view(row)


async def get_company(session: AsyncSession, caller: Caller, company_id: str) -> CompanyView:
    row = await session.get(Company, company_id)
    if row is None or caller.company_id not in (None, row.id):
        raise NotFound("company", company_id)
    return _view(row)


async def list_companies(session: AsyncSession, caller: Caller, page: PageRequest) -> Page[CompanyView]:
    """The companies the caller sees (an application: its own), ordered by id."""
    query = select(Company).order_by(Company.id).limit(page.fetch)
    if caller.company_id is not None:
        query = query.where(Company.id == caller.company_id)
    if page.after is not None:
        query = query.where(Company.id > page.after)
    return page.page([_view(row) for row in await session.scalars(query)], lambda company: company.id)
