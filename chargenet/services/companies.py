"""Companies, the top of the tenant tree. Only the store's operator creates them; an application sees its own."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.tenants import validate_name
from chargenet.errors import Forbidden, NotFound
from chargenet.ids import new_id
from chargenet.services import audit
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.views import Instant, View
from chargenet.store.models import Company


class CompanyView(View):
    id: str
    name: str
    created_at: Instant


def _view(row: Company) -> CompanyView:
    return CompanyView(id=row.id, name=row.name, created_at=row.created_at)


async def create_company(session: AsyncSession, caller: Caller, *, name: str, now: datetime) -> CompanyView:
    if caller.company_id is not None:
        raise Forbidden("companies are created by the operator of the service")
    row = Company(id=new_id("co"), name=validate_name(name), created_at=now)
    session.add(row)
    await session.flush()
    await audit.record_change(session, caller, "company.create", row, now=now, detail={"name": row.name})
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
