"""The principals each process keeps: read again once however many of an application's requests find its principal
out of date together (every request of it in flight does, the moment it expires)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import event

from chargenet.auth.principals import PRINCIPAL_TTL, PrincipalCache, PrincipalReader
from chargenet.clock import ManualClock
from chargenet.store.db import Store


@pytest.mark.postgresql_only(
    reason="on SQLite a principal is read in one synchronous call, which no other request can overlap"
)
async def test_requests_that_find_a_principal_out_of_date_together_read_it_once(
    store: Store, clock: ManualClock
) -> None:
    statements: list[str] = []

    def executed(*args: Any) -> None:
        if "applications" in args[2]:
            statements.append(args[2])

    event.listen(store.engine.sync_engine, "before_cursor_execute", executed)
    cache = PrincipalCache(PrincipalReader(store), clock)
    assert await asyncio.gather(*(cache.get("app_unknown") for _ in range(50))) == [None] * 50
    assert len(statements) == 1
    clock.advance(PRINCIPAL_TTL)
    assert await asyncio.gather(*(cache.get("app_unknown") for _ in range(50))) == [None] * 50
    assert len(statements) == 2
