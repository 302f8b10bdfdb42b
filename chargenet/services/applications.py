"""Client applications: create under a company, disable, enable, delete, rotate the secret.

The secret is returned once, by `create_application` and `rotate_secret`, and only its keyed hash is
stored. Every change here reaches tokens already issued through the bearer check, which reloads an
application's state at least every PRINCIPAL_TTL seconds (chargenet.auth.principals).

`company_id`, where given, scopes the lookup to one tenant: an application of another company is then
reported as not found, exactly like one that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.auth.secrets import new_client_id, new_client_secret
from chargenet.domain.tenants import validate_name
from chargenet.errors import NotFound
from chargenet.keys import SecretHasher
from chargenet.store.models import Application, Company, GroupMember


@dataclass(frozen=True, slots=True)
class ApplicationView:
    client_id: str
    company_id: str
    name: str
    enabled: bool
    group_ids: tuple[str, ...]
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "companyId": self.company_id,
            "name": self.name,
            "enabled": self.enabled,
            "groupIds": list(self.group_ids),
            "createdAt": self.created_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class Credentials:
    client_id: str
    client_secret: str

    def to_json(self) -> dict[str, str]:
        return {"client_id": self.client_id, "client_secret": self.client_secret}


async def _get(session: AsyncSession, client_id: str, company_id: str | None) -> Application:
    app = await session.get(Application, client_id)
    if app is None or (company_id is not None and app.company_id != company_id):
        raise NotFound("application", client_id)
    return app


async def create_application(
    session: AsyncSession, hasher: SecretHasher, *, company_id: str, name: str, now: datetime
) -> Credentials:
    name = validate_name(name)
    if await session.get(Company, company_id) is None:
        raise NotFound("company", company_id)
    client_id, secret = new_client_id(), new_client_secret()
    session.add(
        Application(
            client_id=client_id,
            company_id=company_id,
            name=name,
            secret_hash=hasher.hash(secret),
            secret_generation=1,
            enabled=True,
            created_at=now,
            updated_at=now,
        )
    )
    await session.flush()
    return Credentials(client_id, secret)


async def set_enabled(
    session: AsyncSession, client_id: str, *, enabled: bool, now: datetime, company_id: str | None = None
) -> ApplicationView:
    app = await _get(session, client_id, company_id)
    app.enabled = enabled
    app.updated_at = now
    await session.flush()
    return await _view(session, app)


async def delete_application(session: AsyncSession, client_id: str, *, company_id: str | None = None) -> None:
    app = await _get(session, client_id, company_id)
    await session.execute(delete(GroupMember).where(GroupMember.client_id == client_id))
    await session.delete(app)
    await session.flush()


async def rotate_secret(
    session: AsyncSession, hasher: SecretHasher, client_id: str, *, now: datetime, company_id: str | None = None
) -> Credentials:
    """A new secret; the old one stops working at once, and tokens it obtained are revoked with it."""
    app = await _get(session, client_id, company_id)
    secret = new_client_secret()
    app.secret_hash = hasher.hash(secret)
    app.secret_generation += 1
    app.updated_at = now
    await session.flush()
    return Credentials(client_id, secret)


async def _view(session: AsyncSession, app: Application) -> ApplicationView:
    groups = await session.scalars(
        select(GroupMember.group_id).where(GroupMember.client_id == app.client_id).order_by(GroupMember.group_id)
    )
    return ApplicationView(app.client_id, app.company_id, app.name, app.enabled, tuple(groups), app.created_at)


async def get_application(session: AsyncSession, client_id: str, *, company_id: str | None = None) -> ApplicationView:
    return await _view(session, await _get(session, client_id, company_id))


async def list_applications(
    session: AsyncSession, *, company_id: str | None = None, limit: int | None = None, after: str | None = None
) -> list[ApplicationView]:
    """Applications ordered by `client_id`, from just after `after`, at most `limit` of them."""
    query = select(Application).order_by(Application.client_id)
    if company_id is not None:
        query = query.where(Application.company_id == company_id)
    if after is not None:
        query = query.where(Application.client_id > after)
    if limit is not None:
        query = query.limit(limit)
    apps = list(await session.scalars(query))
    groups: dict[str, list[str]] = {}
    if apps:
        # One query for the whole page's memberships, not one per application.
        members = await session.execute(
            select(GroupMember.client_id, GroupMember.group_id)
            .where(GroupMember.client_id.in_([a.client_id for a in apps]))
            .order_by(GroupMember.client_id, GroupMember.group_id)
        )
        for client_id, group_id in members:
            groups.setdefault(client_id, []).append(group_id)
    return [
        ApplicationView(a.client_id, a.company_id, a.name, a.enabled, tuple(groups.get(a.client_id, ())), a.created_at)
        for a in apps
    ]
