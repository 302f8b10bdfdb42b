"""Who is calling: an application's current state and grants, loaded per request with a short cache.

Permissions are evaluated when a request arrives (not frozen into the token), so a change to an application
or its groups reaches tokens already issued within PRINCIPAL_TTL seconds: well inside the 5 seconds that
decisions.md §3 allows, and it holds across processes because each one reads the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.auth.permissions import Grant, Permissions
from chargenet.clock import Clock
from chargenet.domain.scopes import Scope
from chargenet.store.db import Store
from chargenet.store.models import Application, Group, GroupMember

PRINCIPAL_TTL = 2.0
MAX_CACHED = 10_000


@dataclass(frozen=True, slots=True)
class Principal:
    client_id: str
    company_id: str
    enabled: bool
    secret_generation: int
    secret_hash: str
    permissions: Permissions


async def load_principal(session: AsyncSession, client_id: str) -> Principal | None:
    app = await session.get(Application, client_id)
    if app is None:
        return None
    rows = await session.execute(
        select(Group.company_id, Group.site_id, Group.scopes)
        .join(GroupMember, GroupMember.group_id == Group.id)
        .where(GroupMember.client_id == client_id)
    )
    grants = [
        Grant(company_id, site_id, frozenset(Scope(s) for s in scopes.split() if s in Scope.__members__.values()))
        for company_id, site_id, scopes in rows
    ]
    return Principal(
        client_id=app.client_id,
        company_id=app.company_id,
        enabled=app.enabled,
        secret_generation=app.secret_generation,
        secret_hash=app.secret_hash,
        permissions=Permissions.of(app.company_id, grants),
    )


class PrincipalCache:
    """Principals by client id, each reused for at most `ttl` seconds of the clock."""

    def __init__(self, store: Store, clock: Clock, ttl: float = PRINCIPAL_TTL) -> None:
        self._store = store
        self._clock = clock
        self._ttl = timedelta(seconds=ttl)
        self._entries: dict[str, tuple[datetime, Principal | None]] = {}

    async def get(self, client_id: str) -> Principal | None:
        now = self._clock.now()
        cached = self._entries.get(client_id)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        async with self._store.transaction() as session:
            principal = await load_principal(session, client_id)
        if len(self._entries) >= MAX_CACHED:
            self._entries.clear()
        self._entries[client_id] = (now, principal)
        return principal
