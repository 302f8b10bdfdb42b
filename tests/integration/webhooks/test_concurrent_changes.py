"""Webhook changes racing the filler on PostgreSQL, where transactions really run side by side (SQLite runs
one writer at a time, so these races cannot happen there)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select, text

from chargenet.clock import ManualClock
from chargenet.services import webhook_dead_letters
from chargenet.services.callers import OPERATOR
from chargenet.store import schema
from chargenet.store.db import Store
from chargenet.store.models import WebhookLane
from chargenet.webhooks.queue import enqueue
from tests.conftest import create_pg_database, drop_pg_database
from tests.integration.webhooks.harness import make_harness


@pytest.fixture
async def pg_store() -> AsyncIterator[Store]:
    url = await create_pg_database()
    store = Store(url)
    try:
        await schema.prepare_schema(store)
        yield store
    finally:
        await store.dispose()
        await drop_pg_database(url)


async def _until_a_transaction_waits_for_a_lock(store: Store, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        async with store.transaction() as session:
            waiting = await session.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
            )
        if waiting:
            return
        if time.monotonic() > deadline:
            raise AssertionError("no transaction waited for a lock")
        await asyncio.sleep(0.01)


async def test_event_the_filler_commits_while_its_type_is_dropped_is_dead_lettered(
    pg_store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(pg_store, clock, tmp_path)
    webhook_id = await harness.webhook("http://127.0.0.1:9/hook", events="Authorize,StopTransaction")
    lane_id = await harness.lane_id(webhook_id)

    async def drop_authorize() -> None:
        await harness.subscribe(webhook_id, "StopTransaction")

    # What a filler round does to the lane: lock it, add an event; the change starts before it commits.
    async with pg_store.transaction() as filler:
        lane = await filler.scalar(select(WebhookLane).where(WebhookLane.id == lane_id).with_for_update())
        assert lane is not None
        await enqueue(filler, lane, event_id="ev-A", body='{"eventId": "ev-A"}', now=clock.now())
        change = asyncio.create_task(drop_authorize())
        await _until_a_transaction_waits_for_a_lock(pg_store)
    await change
    async with pg_store.transaction() as session:
        page = await webhook_dead_letters.list_dead_letters(session, OPERATOR, webhook_id)
    assert [(d.event_id, d.reason) for d in page.items] == [("ev-A", "unsubscribed")]
