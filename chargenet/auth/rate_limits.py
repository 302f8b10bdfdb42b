"""Rate limits per application on the API: the process's buckets, and on PostgreSQL the budget all processes share.

The policy is `chargenet.domain.rate_limits`. On SQLite a store has one serving process, and each application's
bucket lives in its memory: a request costs a dictionary lookup and a little arithmetic. On PostgreSQL the budget
is one bucket per application in `rate_limit_buckets`, shared by every process; a process takes a slice of it in
one short transaction and spends the slice in memory (Rule 3), so the store is asked once a slice, not once a
request. How far the processes together can stray from the quota is in docs/decisions.md ("Rate limits").

An application's quota comes with its principal (`principals`), so a changed limit applies within PRINCIPAL_TTL.
"""

from __future__ import annotations

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
    """The processes' shared buckets in the store, and this process's shares of them."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._shares: dict[str, Share] = {}

    async def admit(self, client_id: str, quota: Quota, now: float) -> Decision:
        share = self._shares.get(client_id)
        if share is None:
            if len(self._shares) >= MAX_TRACKED:
                self._shares.clear()
            share = unclaimed(quota, now)
        spent = spend(share, quota, now)
        if spent is None:
            left, granted = await self._claim(client_id, quota, now)
            # Another request of this process may have claimed meanwhile: what it holds is added to, not replaced.
            share = claimed(self._shares.get(client_id, share), left, granted)
            spent = spend(share, quota, now)
            assert spent is not None, "a claim either grants a token or leaves less than one"
        self._shares[client_id] = spent[0]
        return spent[1]

    async def _claim(self, client_id: str, quota: Quota, now: float) -> tuple[Bucket, int]:
        """Take a slice from the application's shared bucket (a full one when it has none yet): the bucket as left,
        and how many tokens were taken. The row is locked for the claim's few statements only."""
        async with self._store.transaction() as session:
            await session.execute(
                insert(RateLimitBucket)
                .values(client_id=client_id, tokens=float(quota.requests), at=now)
                .on_conflict_do_nothing()
            )
            row = (
                await session.execute(
                    select(RateLimitBucket.tokens, RateLimitBucket.at)
                    .where(RateLimitBucket.client_id == client_id)
                    .with_for_update()
                )
            ).one()
            left, granted = take(Bucket(row.tokens, row.at), quota, now, slice_of(quota))
            await session.execute(
                update(RateLimitBucket)
                .where(RateLimitBucket.client_id == client_id)
                .values(tokens=left.tokens, at=left.at)
            )
        return left, granted
