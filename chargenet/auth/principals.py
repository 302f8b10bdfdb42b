"""Who is calling: an application's current state and grants, read from the database.

Permissions are evaluated when a request arrives (not frozen into the token), so a change to an application
or its groups reaches tokens already issued within PRINCIPAL_TTL seconds: well inside the 5 seconds that
decisions.md §3 allows, and it holds across processes because each one reads the database.

The token endpoint reads the application on every grant (a rotated secret stops working at once), so that
read is the hot path of the service. It is one statement; on SQLite it runs on a read-only connection of
its own, synchronously: a primary-key lookup in a WAL database takes microseconds and never waits for
writers, which costs less than the thread hand-offs of the async driver and its BEGIN IMMEDIATE. On PostgreSQL
it runs outside a transaction (`Store.read_statement`): one round trip, not three.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import make_url

from chargenet.auth.permissions import Grant, Permissions
from chargenet.clock import Clock
from chargenet.domain.scopes import Scope
from chargenet.store.db import Store
from chargenet.store.models import Application, Group, GroupMember

PRINCIPAL_TTL = 2.0
MAX_CACHED = 10_000
_KNOWN_SCOPES = frozenset(s.value for s in Scope)


@dataclass(frozen=True, slots=True)
class Principal:
    client_id: str
    company_id: str
    enabled: bool
    secret_generation: int
    secret_hash: str
    permissions: Permissions
    jwks: str | None = None  # the public keys of private_key_jwt, as registered
    jwks_url: str | None = None
    rate_limit: int | None = None  # requests a minute the API admits; None: the default quota


def _principal(client_id: str, rows: Iterable[Sequence[Any]]) -> Principal | None:
    rows = list(rows)
    if not rows:
        return None
    company_id, enabled, generation, secret_hash, jwks, jwks_url, rate_limit = rows[0][:7]
    grants = [
        Grant(group_company, site_id, frozenset(Scope(s) for s in scopes.split() if s in _KNOWN_SCOPES))
        for *_, group_company, site_id, scopes in rows
        if group_company is not None
    ]
    return Principal(
        client_id=client_id,
        company_id=company_id,
        enabled=bool(enabled),
        secret_generation=int(generation),
        secret_hash=secret_hash,
        permissions=Permissions.of(company_id, grants),
        jwks=jwks,
        jwks_url=jwks_url,
        rate_limit=rate_limit,
    )


class PrincipalReader:
    """Reads one application and its grants in a single statement."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._statement = (
            select(
                Application.company_id,
                Application.enabled,
                Application.secret_generation,
                Application.secret_hash,
                Application.jwks,
                Application.jwks_url,
                Application.rate_limit,
                Group.company_id,
                Group.site_id,
                Group.scopes,
            )
            .outerjoin(GroupMember, GroupMember.client_id == Application.client_id)
            .outerjoin(Group, Group.id == GroupMember.group_id)
            .where(Application.client_id == bindparam("client_id"))
        )
        url = make_url(store.url)
        self._sqlite_path = url.database if store.dialect == "sqlite" and url.database != ":memory:" else None
        self._sqlite_sql = str(self._statement.compile(dialect=sqlite_dialect.dialect()))
        self._sqlite: sqlite3.Connection | None = None
        # The principal last built for each client, with the rows it was built from (see `_built`).
        self._built_from: dict[str, tuple[list[tuple[Any, ...]], Principal | None]] = {}

    async def read(self, client_id: str) -> Principal | None:
        if self._sqlite_path:
            if self._sqlite is None:
                # Opened on first use, so commands that never authenticate never open it.
                self._sqlite = sqlite3.connect(
                    f"file:{self._sqlite_path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
                )
            return self._built(client_id, self._sqlite.execute(self._sqlite_sql, (client_id,)).fetchall())
        # One statement sees one snapshot by itself: outside a transaction, which on PostgreSQL spares the BEGIN and
        # ROLLBACK round trips around it (each a write to the server's socket: most of a grant's CPU beyond the
        # signature there, docs/performance.md).
        rows = await self._store.read_statement(
            lambda connection: [tuple(row) for row in connection.execute(self._statement, {"client_id": client_id})]
        )
        return self._built(client_id, rows)

    def _built(self, client_id: str, rows: list[tuple[Any, ...]]) -> Principal | None:
        """The principal of `rows`: the one built last for the client when the rows just read are the same. A
        principal is a pure function of its rows, so reusing it shows nothing older than this read; building it
        anew (its grants, scopes and permissions) was 4 % of a grant under cProfile, 8 % of what a grant does beyond
        the signature."""
        known = self._built_from.get(client_id)
        if known is not None and known[0] == rows:
            return known[1]
        principal = _principal(client_id, rows)
        if len(self._built_from) >= MAX_CACHED:
            self._built_from.clear()
        self._built_from[client_id] = (rows, principal)
        return principal

    def close(self) -> None:
        if self._sqlite is not None:
            self._sqlite.close()
            self._sqlite = None


class PrincipalCache:
    """Principals by client id, each reused for at most `ttl` seconds of the clock.

    An application's requests in flight all find its principal out of date at the same moment: one of them reads it
    and the others wait for that read. On PostgreSQL each read a round trip on a pooled connection of its own, so
    50 clients of one application made 50 reads every `ttl`, queued for the pool, 170-620 ms each under load
    (docs/performance.md); on SQLite a read is one synchronous call, which no other request can overlap."""

    def __init__(self, reader: PrincipalReader, clock: Clock, ttl: float = PRINCIPAL_TTL) -> None:
        self._reader = reader
        self._clock = clock
        self._ttl = timedelta(seconds=ttl)
        self._entries: dict[str, tuple[datetime, Principal | None]] = {}
        self._reading: dict[str, asyncio.Future[None]] = {}  # by client id: done when its read in flight ends

    async def get(self, client_id: str) -> Principal | None:
        now = self._clock.now()
        cached = self._entries.get(client_id)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        reading = self._reading.get(client_id)
        if reading is not None:
            await asyncio.shield(reading)  # a request cancelled meanwhile leaves the read to the others
            read = self._entries.get(client_id)
            if read is not None and read is not cached:
                return read[1]
        return await self._read(client_id, now)

    async def _read(self, client_id: str, now: datetime) -> Principal | None:
        reading = self._reading[client_id] = asyncio.get_running_loop().create_future()
        try:
            principal = await self._reader.read(client_id)
        finally:
            if self._reading.get(client_id) is reading:
                del self._reading[client_id]
            reading.set_result(None)
        if len(self._entries) >= MAX_CACHED:
            self._entries.clear()
        self._entries[client_id] = (now, principal)
        return principal
