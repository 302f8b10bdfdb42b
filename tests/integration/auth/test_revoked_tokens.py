"""The revoked tokens each process keeps: read again from the store once however many requests find them out of
date together (every request in flight does, the moment they expire)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

import pytest
from sqlalchemy import Connection

from chargenet.auth.principals import PRINCIPAL_TTL
from chargenet.auth.revocations import RevokedTokens
from chargenet.clock import ManualClock
from chargenet.store.db import Store
from chargenet.store.models import RevokedToken

T = TypeVar("T")


async def test_requests_that_find_the_revoked_tokens_out_of_date_together_read_the_store_once(
    store: Store, clock: ManualClock
) -> None:
    reads: list[float] = []
    store.time_units(transaction=lambda _: None, read=reads.append)
    revoked = RevokedTokens(store, clock)
    checks = ["kept", "gone"] * 25
    assert not any(await asyncio.gather(*(revoked.is_revoked(jti) for jti in checks)))
    assert len(reads) == 1
    async with store.transaction() as session:  # what another process writes when it revokes a token
        session.add(RevokedToken(jti="gone", client_id="app_other", expires_at=clock.now() + timedelta(minutes=15)))
    clock.advance(PRINCIPAL_TTL)
    assert await asyncio.gather(*(revoked.is_revoked(jti) for jti in checks)) == [False, True] * 25
    assert len(reads) == 2


async def test_an_older_read_ending_last_does_not_take_back_a_revocation_a_newer_read_brought(
    store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = store.read_statement
    calls = 0
    failing, older_read, newer_may_read = asyncio.Event(), asyncio.Event(), asyncio.Event()
    newer_read, older_may_end = asyncio.Event(), asyncio.Event()

    async def read_statement(work: Callable[[Connection], T]) -> T:
        nonlocal calls
        calls += 1
        if calls == 1:  # fails, so that each request that waited for it reads on its own
            await failing.wait()
            raise OSError("the store is away")
        if calls == 2:  # reads before the revocation, and ends last
            result = await real(work)
            older_read.set()
            await older_may_end.wait()
            return result
        await newer_may_read.wait()  # reads after it, and ends first
        result = await real(work)
        newer_read.set()  # applied before the test runs again: it follows in the same step
        return result

    monkeypatch.setattr(store, "read_statement", read_statement)
    revoked = RevokedTokens(store, clock)
    checks = [asyncio.create_task(revoked.is_revoked("gone")) for _ in range(3)]
    await asyncio.sleep(0)  # the first request's read is in flight, the others wait for it
    failing.set()
    await older_read.wait()
    async with store.transaction() as session:  # another process revokes the token
        session.add(RevokedToken(jti="gone", client_id="app_other", expires_at=clock.now() + timedelta(minutes=15)))
    newer_may_read.set()
    await newer_read.wait()
    assert await revoked.is_revoked("gone")
    older_may_end.set()
    await asyncio.gather(*checks, return_exceptions=True)
    assert calls == 3
    assert await revoked.is_revoked("gone")
