from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.tenants import validate_name
from chargenet.errors import NotFound
from chargenet.ids import new_id
from chargenet.store.models import Company


@dataclass(frozen=True, slots=True)
class CompanyView:
    id: str
    name: str
    created_at: datetime

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "createdAt": self.created_at.isoformat()}


def _view(row: Company) -> CompanyView:
    return CompanyView(row.id, row.name, row.created_at)


async def create_company(session: AsyncSession, *, name: str, now: datetime) -> CompanyView:
    row = Company(id=new_id("co"), name=validate_name(name), created_at=now)
    session.add(row)
    await session.flush()
    return _view(row)


async def get_company(session: AsyncSession, company_id: str) -> CompanyView:
    row = await session.get(Company, company_id)
    if row is None:
        raise NotFound("company", company_id)
    return _view(row)


async def list_companies(session: AsyncSession) -> list[CompanyView]:
    rows = await session.scalars(select(Company).order_by(Company.created_at, Company.id))
    return [_view(row) for row in rows]
