"""What the authorization server remembers in the store beyond applications: revoked tokens and used assertions.

A revoked token (RFC 7009) is refused by the bearer check the way a disabled application is: each process keeps
the set of revoked `jti`s and reads it again from the store at most every PRINCIPAL_TTL seconds, so a token
revoked in any process is refused by every process within that time, well inside the 5 seconds decisions.md §3
allows for a group change; the process that revoked it refuses it at once. A row is kept until the token would
have expired anyway (900 s), then purged by the next revocation.

Reading the set again is on the path of every request that finds it out of date, so it is one statement
(`Store.read_statement`: on SQLite pysqlite on the loop's thread, on PostgreSQL one round trip) and one read for
all the requests that find it out of date while it runs. As a unit of the ORM session each of them read it on its
own, a thread hop a statement: with 50 clients asking, every 2 s all 50 requests in flight waited 250 ms to 1.4 s
for 50 reads, the whole tail of `bench_auth`'s single reads (docs/performance.md).

A client assertion's `jti` is recorded once it has authenticated a client, until the assertion expires; a second
use of it is refused (RFC 7523 §3, item 7). The primary key makes that hold across processes sharing a database.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, delete, select
from sqlalchemy.exc import IntegrityError

from chargenet.auth.principals import PRINCIPAL_TTL
from chargenet.clock import Clock
from chargenet.store.db import Store
from chargenet.store.models import RevokedToken, UsedAssertion


def _instant(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _revoked_at(connection: Connection, now: datetime) -> frozenset[str]:
    """The `jti`s of the tokens revoked and not yet expired at `now`."""
    return frozenset(connection.execute(select(RevokedToken.jti).where(RevokedToken.expires_at > now)).scalars())


class RevokedTokens:
    def __init__(self, store: Store, clock: Clock, ttl: float = PRINCIPAL_TTL) -> None:
        self._store = store
        self._clock = clock
        self._ttl = timedelta(seconds=ttl)
        self._read_at: datetime | None = None
        self._revoked: frozenset[str] = frozenset()
        self._here: set[str] = set()  # revoked by this process since the last read
        self._reading: asyncio.Future[None] | None = None  # done when the read in flight ends, however it ends
        # Reads may overlap (after one failed, each of its waiters reads): only a read begun after the one applied
        # last is applied, so an older read ending last cannot take back a revocation a newer one brought.
        self._reads_begun = 0
        self._applied = 0

    async def is_revoked(self, jti: str) -> bool:
        now = self._clock.now()
        if self._read_at is None or now - self._read_at >= self._ttl:
            reading, read_at = self._reading, self._read_at
            if reading is not None:
                await asyncio.shield(reading)  # a request cancelled meanwhile leaves the read to the others
            if reading is None or self._read_at == read_at:  # none was in flight, or it failed: read them
                await self._read_again(now)
        return jti in self._revoked or jti in self._here

    async def _read_again(self, now: datetime) -> None:
        """Read in the request's own task, not one of its own: on SQLite it then ends before any other request
        runs, where waiting for a task cost every request in flight a turn of the busy event loop."""
        reading = self._reading = asyncio.get_running_loop().create_future()
        here = set(self._here)  # a revocation of this process during the read may be missing from it: kept
        self._reads_begun += 1
        begun = self._reads_begun
        try:
            revoked = await self._store.read_statement(lambda connection: _revoked_at(connection, now))
            if begun > self._applied:
                self._applied = begun
                self._revoked = revoked
                self._here -= here
                self._read_at = now
        finally:
            if self._reading is reading:
                self._reading = None
            reading.set_result(None)

    async def revoke(self, *, jti: str, client_id: str, expires_at: int) -> None:
        """Record the token as revoked (again is harmless) and purge rows whose tokens have expired."""
        now = self._clock.now()
        try:
            async with self._store.transaction() as session:
                await session.execute(delete(RevokedToken).where(RevokedToken.expires_at <= now))
                if await session.get(RevokedToken, jti) is None:
                    session.add(RevokedToken(jti=jti, client_id=client_id, expires_at=_instant(expires_at)))
        except IntegrityError:
            pass  # another process revoked it at the same moment
        self._here.add(jti)


class UsedAssertions:
    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    async def first_use(self, *, client_id: str, jti: str, expires_at: int) -> bool:
        """Record the assertion's `jti`; False when it was used before (a replay)."""
        now = self._clock.now()
        try:
            async with self._store.transaction() as session:
                await session.execute(delete(UsedAssertion).where(UsedAssertion.expires_at <= now))
                if await session.get(UsedAssertion, (client_id, jti)) is not None:
                    return False
                # Kept a little past `exp`, since the check of `exp` allows for clock skew.
                kept_until = max(_instant(expires_at), now) + timedelta(seconds=60)
                session.add(UsedAssertion(client_id=client_id, jti=jti, expires_at=kept_until))
        except IntegrityError:
            return False
        return True
