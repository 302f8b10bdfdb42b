"""Rate limits per application on the API: the process's buckets, and on PostgreSQL the budget all processes share.

The policy is `chargenet.domain.rate_limits`. On SQLite a store has one serving process, and each application's
bucket lives in its memory: a request costs a dictionary lookup and a little arithmetic. On PostgreSQL the budget
is one bucket per application in `rate_limit_buckets`, shared by every process; a process takes a slice of it (one
claim at a time, `SharedBuckets`) and spends the slice in memory (Rule 3), so the store is asked once a slice, not
once a request. How far the processes together can stray from the quota is in docs/decisions.md ("Rate limits").

An application's quota comes with its principal (`principals`), so a changed limit applies within PRINCIPAL_TTL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert

from chargenet.auth.principals import Principal
from chargenet.clock import Clock
from chargenet.domain.rate_limits import (
    Bucket,
    Decision,
    Quota,
    Share,
    admit,
    claimed,
    full,
    quota_of,
    slice_of,
    spend,
    take,
    unclaimed,
)
from chargenet.store.db import Store
from chargenet.store.models import RateLimitBucket

MAX_TRACKED = 10_000  # applications whose bucket a process keeps; past that it starts afresh (like the principals)

Refused = Callable[[str], None]  # told the class of the refused application's limit: "default" or "custom"


def limit_class(principal: Principal) -> str:
    """The label a refusal is counted under: never the application, only whether its limit is its own."""
    return "default" if principal.rate_limit is None else "custom"


class RateLimits:
    """Admits or refuses an application's API requests."""

    def __init__(self, store: Store, clock: Clock, refused: Refused | None = None) -> None:
        self._clock = clock
        self._refused = refused
        self._shared = SharedBuckets(store) if store.dialect == "postgresql" else None
        self._buckets: dict[str, Bucket] = {}

    def count_refusals(self, refused: Refused) -> None:
        self._refused = refused

    async def admit(self, principal: Principal) -> Decision:
        quota = quota_of(principal.rate_limit)
        now = self._clock.now().timestamp()
        if self._shared is not None:
            decision = await self._shared.admit(principal.client_id, quota, now)
        else:
            decision = self._admit_here(principal.client_id, quota, now)
        if not decision.allowed and self._refused is not None:
            self._refused(limit_class(principal))
        return decision

    def _admit_here(self, client_id: str, quota: Quota, now: float) -> Decision:
        bucket = self._buckets.get(client_id)
        if bucket is None:
            if len(self._buckets) >= MAX_TRACKED:
                self._buckets.clear()
            bucket = full(quota, now)
        self._buckets[client_id], decision = admit(bucket, quota, now)
        return decision


class SharedBuckets:
    """The processes' shared buckets in the store, and this process's shares of them.

    One claim of an application's slice at a time in a process: the requests that find its share spent while a claim
    runs wait for that claim and spend what it brought. Each of them claiming for itself, 50 clients' requests in
    flight made 50 claims at once, queued on the bucket's row lock one after the other (a few hundred milliseconds for
    the last), and left the process holding fifty slices where decisions.md's tolerance counts one.

    A claim is one statement when nothing else claimed since this process's last claim: the row is changed only if
    it is still as this process left it (a compare-and-set, committed by itself). Otherwise (the first claim, another
    process's claim since) the row is locked and read in a short transaction as before. The requests waiting for a
    claim wait for one round trip, not four."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._shares: dict[str, Share] = {}
        self._claims: dict[str, asyncio.Future[None]] = {}  # by client id: done when its claim in flight ends
        self._rows: dict[str, Bucket] = {}  # by client id: its row as this process's last claim left it

    async def admit(self, client_id: str, quota: Quota, now: float) -> Decision:
        while True:
            share = self._shares.get(client_id)
            if share is None:
                if len(self._shares) >= MAX_TRACKED:
                    self._shares.clear()
                    self._rows.clear()
                share = unclaimed(quota, now)
            spent = spend(share, quota, now)
            if spent is not None:
                self._shares[client_id] = spent[0]
                return spent[1]
            claim = self._claims.get(client_id)
            if claim is not None:
                # What it brings may be spent by the others waiting before this request's turn: then it claims again.
                await asyncio.shield(claim)  # a request cancelled meanwhile leaves the claim to the others
            else:
                await self._claim_once(client_id, quota, now, share)

    async def _claim_once(self, client_id: str, quota: Quota, now: float, share: Share) -> None:
        claim = self._claims[client_id] = asyncio.get_running_loop().create_future()
        try:
            left, granted = await self._claim(client_id, quota, now)
            # What this process held before the claim is added to, not replaced.
            self._shares[client_id] = claimed(self._shares.get(client_id, share), left, granted)
        except Exception as exc:
            # The requests waiting for it fail with it: each claiming again in turn, behind a store that fails
            # slowly (a pool's 30 s), the last would fail after all the others' waits.
            claim.set_exception(exc)
            claim.exception()  # the claimer raises it itself, whether or not anyone waited
            raise
        finally:
            if self._claims.get(client_id) is claim:
                del self._claims[client_id]
            if not claim.done():  # done, or the claimer cancelled: a waiter claims in its place
                claim.set_result(None)

    async def _claim(self, client_id: str, quota: Quota, now: float) -> tuple[Bucket, int]:
        """Take a slice from the application's shared bucket (a full one when it has none yet): the bucket as left,
        and how many tokens were taken."""
        wanted = slice_of(quota)
        last = self._rows.pop(client_id, None)
        if last is not None:
            left, granted = take(last, quota, now, wanted)
            unchanged = (
                update(RateLimitBucket)
                .where(
                    RateLimitBucket.client_id == client_id,
                    RateLimitBucket.tokens == last.tokens,
                    RateLimitBucket.at == last.at,
                )
                .values(tokens=left.tokens, at=left.at)
            )
            if await self._store.write_statement(lambda connection: connection.execute(unchanged).rowcount) == 1:
                self._rows[client_id] = left
                return left, granted
        left, granted = await self._claim_locked(client_id, quota, now, wanted)
        self._rows[client_id] = left
        return left, granted

    async def _claim_locked(self, client_id: str, quota: Quota, now: float, wanted: int) -> tuple[Bucket, int]:
        """The claim from the row as it is, locked for the claim's few statements only."""
        async with self._store.transaction() as session:
            locked = select(RateLimitBucket.tokens, RateLimitBucket.at).where(RateLimitBucket.client_id == client_id)
            row = (await session.execute(locked.with_for_update())).one_or_none()
            if row is None:  # its first claim in any process
                await session.execute(
                    insert(RateLimitBucket)
                    .values(client_id=client_id, tokens=float(quota.requests), at=now)
                    .on_conflict_do_nothing()
                )
                row = (await session.execute(locked.with_for_update())).one()
            left, granted = take(Bucket(row.tokens, row.at), quota, now, wanted)
            await session.execute(
                update(RateLimitBucket)
                .where(RateLimitBucket.client_id == client_id)
                .values(tokens=left.tokens, at=left.at)
            )
        return left, granted
