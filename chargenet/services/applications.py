"""Client applications: create under a company, disable, enable, delete, rotate the secret.

The secret is returned once, by `create` and `rotate_secret`, and only its keyed hash is stored. Every
change here reaches tokens already issued through the bearer check, which reloads an application's state
at least every PRINCIPAL_TTL seconds (chargenet.auth.principals).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.auth.secrets import SecretHasher, new_client_id, new_client_secret
from chargenet.clock import Clock
from chargenet.errors import InvalidInput, NotFound
from chargenet.store.models import Application, Company, GroupMember


@dataclass(frozen=True, slots=True)
class ApplicationView:
    client_id: str
    company_id: str
    name: str
    enabled: bool
    group_ids: tuple[str, ...]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Credentials:
    client_id: str
    client_secret: str


def _check_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 200:
        raise InvalidInput("must be 1 to 200 characters", field="name")
    return name


async def _get(session: AsyncSession, client_id: str, company_id: str | None = None) -> Application:
    app = await session.get(Application, client_id)
    if app is None or (company_id is not None and app.company_id != company_id):
        raise NotFound("application", client_id)
    return app


async def create(
    session: AsyncSession, *, clock: Clock, hasher: SecretHasher, company_id: str, name: str
) -> Credentials:
    name = _check_name(name)
    if await session.get(Company, company_id) is None:
        raise NotFound("company", company_id)
    client_id, secret = new_client_id(), new_client_secret()
    now = clock.now()
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
    session: AsyncSession, *, clock: Clock, client_id: str, enabled: bool, company_id: str | None = None
) -> None:
    app = await _get(session, client_id, company_id)
    app.enabled = enabled
    app.updated_at = clock.now()


async def delete_application(session: AsyncSession, *, client_id: str, company_id: str | None = None) -> None:
    app = await _get(session, client_id, company_id)
    await session.execute(delete(GroupMember).where(GroupMember.client_id == client_id))
    await session.delete(app)


async def rotate_secret(
    session: AsyncSession, *, clock: Clock, hasher: SecretHasher, client_id: str, company_id: str | None = None
) -> Credentials:
    """A new secret; the old one stops working at once and tokens it obtained are revoked."""
    app = await _get(session, client_id, company_id)
    secret = new_client_secret()
    app.secret_hash = hasher.hash(secret)
    app.secret_generation += 1
    app.updated_at = clock.now()
    return Credentials(client_id, secret)


async def _view(session: AsyncSession, app: Application) -> ApplicationView:
    groups = await session.scalars(
        select(GroupMember.group_id).where(GroupMember.client_id == app.client_id).order_by(GroupMember.group_id)
    )
    return ApplicationView(app.client_id, app.company_id, app.name, app.enabled, tuple(groups), app.created_at)


async def show(session: AsyncSession, *, client_id: str, company_id: str | None = None) -> ApplicationView:
    return await _view(session, await _get(session, client_id, company_id))


async def list_applications(session: AsyncSession, *, company_id: str | None = None) -> list[ApplicationView]:
    query = select(Application).order_by(Application.client_id)
    if company_id is not None:
        query = query.where(Application.company_id == company_id)
    return [await _view(session, app) for app in await session.scalars(query)]
