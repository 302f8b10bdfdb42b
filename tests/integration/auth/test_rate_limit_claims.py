"""A process's claims of an application's shared rate limit slices (decisions.md "Rate limits"): one claim at a time
however many requests find the share spent together, and the bucket as another process left it read before a claim."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import event, select
from sqlalchemy.exc import IntegrityError

from chargenet.auth.rate_limits import SharedBuckets
from chargenet.clock import ManualClock
from chargenet.domain.rate_limits import Quota, slice_of
from chargenet.services import companies
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import Application, RateLimitBucket

pytestmark = pytest.mark.postgresql_only(reason="on SQLite an application's bucket is in the process's memory")

QUOTA = Quota(1_000)  # a slice of 50
CLIENT = "app_fleet"


async def _application(store: Store, clock: ManualClock) -> None:
    now = clock.now()
    async with store.transaction() as session:
        company = await companies.create_company(session, OPERATOR, name="Fleet", now=now)
        session.add(
            Application(
                client_id=CLIENT, company_id=company.id, name="Fleet", secret_hash="-", created_at=now, updated_at=now
            )
        )


async def _tokens_left(store: Store) -> float:
    async with store.read() as session:
        return (await session.execute(select(RateLimitBucket.tokens))).scalar_one()


async def test_requests_that_find_the_share_spent_together_make_one_claim_at_a_time(
    store: Store, clock: ManualClock
) -> None:
    await _application(store, clock)
    buckets = SharedBuckets(store)
    now = clock.now().timestamp()
    decisions = await asyncio.gather(*(buckets.admit(CLIENT, QUOTA, now) for _ in range(120)))
    assert all(decision.allowed for decision in decisions)
    # Three slices for 120 requests, not a slice each: the process holds less than one unspent.
    assert await _tokens_left(store) == QUOTA.requests - 3 * slice_of(QUOTA)


async def test_a_claim_after_another_process_claimed_takes_from_the_bucket_as_that_process_left_it(
    store: Store, clock: ManualClock
) -> None:
    await _application(store, clock)
    here, there = SharedBuckets(store), SharedBuckets(store)
    now = clock.now().timestamp()
    for _ in range(slice_of(QUOTA)):
        await here.admit(CLIENT, QUOTA, now)
    await there.admit(CLIENT, QUOTA, now)
    assert await _tokens_left(store) == QUOTA.requests - 2 * slice_of(QUOTA)
    await here.admit(CLIENT, QUOTA, now)  # its slice spent: it claims from what the other left
    assert await _tokens_left(store) == QUOTA.requests - 3 * slice_of(QUOTA)
    statements: list[str] = []

    def executed(*args: Any) -> None:
        if "rate_limit_buckets" in args[2]:
            statements.append(args[2])

    event.listen(store.engine.sync_engine, "before_cursor_execute", executed)
    for _ in range(slice_of(QUOTA)):  # and again, nothing claimed elsewhere since: one statement
        await here.admit(CLIENT, QUOTA, now)
    assert await _tokens_left(store) == QUOTA.requests - 4 * slice_of(QUOTA)
    assert len(statements) == 2, statements  # the claim's, and the read of what it left


async def test_requests_waiting_for_a_claim_that_fails_fail_with_it_rather_than_claim_in_turn(
    store: Store, clock: ManualClock
) -> None:
    buckets = SharedBuckets(store)
    inserts: list[str] = []

    def executed(*args: Any) -> None:
        if args[2].lstrip().upper().startswith("INSERT INTO RATE_LIMIT_BUCKETS"):
            inserts.append(args[2])

    event.listen(store.engine.sync_engine, "before_cursor_execute", executed)
    # No such application: the claim's first insert of its bucket breaks the foreign key.
    found = await asyncio.gather(
        *(buckets.admit("app_gone", QUOTA, clock.now().timestamp()) for _ in range(10)), return_exceptions=True
    )
    assert all(isinstance(outcome, IntegrityError) for outcome in found), found
    assert len(inserts) == 1
