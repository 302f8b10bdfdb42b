"""Two real `chargenet serve` processes share one PostgreSQL: each lane is drained by one of them; when that one
is killed in the middle of a retry, the other takes the lane over within 15 s, and nothing is lost or
reordered."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from chargenet.app import open_context
from chargenet.clock import SystemClock
from chargenet.config import load_settings
from chargenet.keys import KeyStore
from chargenet.outbox import Outbox
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import WebhookLane
from chargenet.webhooks.outbound_auth import NoAuth
from tests.conftest import create_pg_database, drop_pg_database
from tests.factories import make_tenant
from tests.integration.webhooks.harness import authorize, tags
from tests.support.receiver import Received, Reply, run_receiver
from tests.support.serve import start_serve


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    url = await create_pg_database()
    try:
        yield url
    finally:
        await drop_pg_database(url)


async def _eventually(condition: Callable[[], bool], timeout: float) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def _owner_pid(store: Store) -> int | None:
    """The process id in the lane's lease owner (`host:pid:nonce`)."""
    async with store.transaction() as session:
        owner = await session.scalar(select(WebhookLane.lease_owner))
    return int(owner.split(":")[1]) if owner else None


@pytest.mark.slow
async def test_killed_process_lane_is_taken_over_within_15_s_without_loss(pg_url: str, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    context = await open_context(load_settings({"database_url": pg_url, "data_dir": str(data_dir)}, environ={}))
    store, clock = context.store, SystemClock()
    failing = {"T3"}
    killed = asyncio.Event()

    def answer(request: Received) -> Reply:
        if tags([request.body])[0] in failing and not killed.is_set():
            return Reply(500)
        return Reply(204)

    async with run_receiver(answer) as receiver:
        tenant = await make_tenant(store, KeyStore(data_dir / "keys"), datetime.now(UTC))
        await webhook_service.create_webhook(
            store.transaction,
            OPERATOR,
            context.keys.credential_cipher(),
            site_id=tenant.site_id,
            url=receiver.url,
            event_types=["Authorize"],
            auth=NoAuth(),
            now=clock.now(),
            allow_private=True,
        )
        first = await start_serve(data_dir, "--database-url", pg_url)
        async with store.transaction() as session:
            for n in range(1, 6):
                await Outbox(clock).publish(session, site_id=tenant.site_id, payload=authorize(f"T{n}"))

        async def owned_by(process: asyncio.subprocess.Process) -> None:
            while await _owner_pid(store) != process.pid:
                await asyncio.sleep(0.05)

        await asyncio.wait_for(owned_by(first), 30)
        second = await start_serve(data_dir, "--database-url", pg_url)
        # The first process is retrying T3 (T1 and T2 delivered) when it dies.
        await _eventually(lambda: [tags([r.body])[0] for r in receiver.received].count("T3") >= 2, 30)
        assert await _owner_pid(store) == first.pid
        first.send_signal(signal.SIGKILL)
        await first.wait()
        killed.set()
        takeover = time.monotonic()
        await asyncio.wait_for(owned_by(second), 20)
        taken_after = time.monotonic() - takeover
        await _eventually(lambda: "T5" in tags(receiver.bodies()), 30)
        second.kill()
        await second.wait()
    await context.close()
    delivered = tags(receiver.bodies())
    first_seen = list(dict.fromkeys(delivered))
    assert taken_after < 15
    assert first_seen == ["T1", "T2", "T3", "T4", "T5"]
    # Only T3, never acknowledged before the kill, is sent more than once.
    assert {tag: delivered.count(tag) for tag in ("T1", "T2", "T4", "T5")} == {"T1": 1, "T2": 1, "T4": 1, "T5": 1}
