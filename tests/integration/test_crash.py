"""A process killed with SIGKILL between a state change and the delivery of its event loses nothing:
after a restart the event is in the outbox, still pending for the webhook engine. Killed before the
commit, neither the state change nor the event exist."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.keys import KeyStore
from chargenet.outbox import OutboxConsumer
from chargenet.store.db import Store
from chargenet.store.models import Connector
from tests.factories import make_tenant

CHILD = Path(__file__).with_name("_crash_child.py")
ROOT = Path(__file__).resolve().parents[2]


async def run_and_kill(database_url: str, keys_dir: Path, stop_at: str) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        database_url,
        str(keys_dir),
        stop_at,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), timeout=60)
    assert line.strip() == b"READY"
    process.send_signal(signal.SIGKILL)
    assert await process.wait() == -signal.SIGKILL


@pytest.mark.slow
async def test_event_committed_before_a_kill_is_there_after_restart(
    store: Store, database_url: str, clock: ManualClock, tmp_path: Path
) -> None:
    await make_tenant(store, KeyStore(tmp_path), clock.now())
    await store.dispose()
    await run_and_kill(database_url, tmp_path, "after-commit")
    restarted = Store(database_url)
    try:
        async with restarted.transaction() as session:
            connector = await session.scalar(select(Connector).where(Connector.charge_point_id == "ST-1"))
            assert connector is not None and connector.status == "Charging"
            [stream] = await OutboxConsumer("webhooks").pending_streams(session)
            assert (stream.event_type, stream.last_seq - stream.after_seq) == ("ChargePointStatus", 1)
    finally:
        await restarted.dispose()


@pytest.mark.slow
async def test_kill_before_commit_leaves_neither_state_nor_event(
    store: Store, database_url: str, clock: ManualClock, tmp_path: Path
) -> None:
    await make_tenant(store, KeyStore(tmp_path), clock.now())
    await store.dispose()
    await run_and_kill(database_url, tmp_path, "before-commit")
    restarted = Store(database_url)
    try:
        async with restarted.transaction() as session:
            connector = await session.scalar(select(Connector).where(Connector.charge_point_id == "ST-1"))
            assert connector is None or connector.status is None
            assert await OutboxConsumer("webhooks").pending_streams(session) == []
    finally:
        await restarted.dispose()
