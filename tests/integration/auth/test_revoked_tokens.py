"""The revoked tokens each process keeps: read again from the store once however many requests find them out of
date together (every request in flight does, the moment they expire)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from chargenet.auth.principals import PRINCIPAL_TTL
from chargenet.auth.revocations import RevokedTokens
from chargenet.clock import ManualClock
from chargenet.store.db import Store
from chargenet.store.models import RevokedToken


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
