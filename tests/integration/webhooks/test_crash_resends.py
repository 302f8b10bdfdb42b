"""A real `chargenet serve` killed with SIGKILL while four busy lanes deliver: after the restart every event
arrives, and a lane re-sends at most 4 events per kill (decisions.md "Crash re-sends", docs/webhooks.md)."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from chargenet.app import open_context
from chargenet.clock import SystemClock
from chargenet.config import load_settings
from chargenet.outbox import Outbox
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import OPERATOR
from chargenet.store.models import WebhookLane
from chargenet.webhooks.engine import UNSETTLED_LIMIT
from chargenet.webhooks.outbound_auth import NoAuth
from tests.factories import make_tenant
from tests.integration.webhooks.harness import authorize
from tests.support.receiver import Received, run_receiver
from tests.support.serve import start_serve

LANES = 4
EVENTS = 400
KILLS = 2
MAX_RESENDS_PER_LANE_PER_KILL = 4


async def _until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.005)


def test_a_lane_sends_at_most_4_events_ahead_of_its_committed_acknowledgements() -> None:
    assert UNSETTLED_LIMIT == MAX_RESENDS_PER_LANE_PER_KILL


@pytest.mark.slow
async def test_kill_9_mid_delivery_re_sends_at_most_4_events_per_lane(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    context = await open_context(load_settings({"data_dir": str(data_dir)}, environ={}))
    store, clock = context.store, SystemClock()
    lane_of: dict[str, str] = {}  # request path -> lane

    def lane(request: Received) -> str:
        return lane_of.get(request.path, request.path)

    async with run_receiver(path="/hook") as receiver:
        tenant = await make_tenant(store, context.keys, datetime.now(UTC))
        for n in range(LANES):
            await webhook_service.create_webhook(
                store.transaction,
                OPERATOR,
                context.keys.credential_cipher(),
                site_id=tenant.site_id,
                url=f"{receiver.url}/{n}",
                event_types=["Authorize"],
                auth=NoAuth(),
                now=clock.now(),
                allow_private=True,
            )
        async with store.transaction() as session:
            for n in range(EVENTS):
                await Outbox(clock).publish(session, site_id=tenant.site_id, payload=authorize(f"T{n}"))

        def delivered_everywhere() -> int:
            """How many distinct events the slowest lane has received."""
            seen: dict[str, set[str]] = {f"/hook/{n}": set() for n in range(LANES)}
            for request in receiver.received:
                seen[lane(request)].add(json.loads(request.body)["eventId"])
            return min(len(ids) for ids in seen.values())

        for kill in range(KILLS):
            process = await start_serve(data_dir)
            # Mid-delivery: every lane busy, none finished.
            target = (kill + 1) * EVENTS // (KILLS + 2)
            await _until(lambda target=target: delivered_everywhere() >= target, 60)  # type: ignore[misc]
            process.send_signal(signal.SIGKILL)
            assert await process.wait() == -signal.SIGKILL
            # The dead process's leases would expire within 10 s; expiring them now spares the wait.
            async with store.transaction() as session:
                await session.execute(
                    update(WebhookLane).values(lease_expires_at=datetime.now(UTC) - timedelta(seconds=1))
                )
        process = await start_serve(data_dir)
        await _until(lambda: delivered_everywhere() == EVENTS, 60)
        process.terminate()
        await process.wait()
    await context.close()

    per_lane = Counter(lane(request) for request in receiver.received)
    resent = {path: count - EVENTS for path, count in sorted(per_lane.items())}
    assert len(resent) == LANES
    assert all(0 <= count <= MAX_RESENDS_PER_LANE_PER_KILL * KILLS for count in resent.values()), resent
