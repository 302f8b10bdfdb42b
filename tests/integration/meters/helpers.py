from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.meters.runtime import MeterPolling
from chargenet.store.db import Store
from chargenet.store.models import OutboxEvent


async def poll(polling: MeterPolling, clock: ManualClock, seconds: float, *, interval: float = 5) -> None:
    """Run every bus's poll cycle each `interval` seconds of the manual clock, for `seconds`."""
    for _ in range(int(seconds / interval)):
        clock.advance(interval)
        for poller in polling.pollers.values():
            await poller.run_once()


async def events(store: Store) -> list[dict[str, Any]]:
    async with store.transaction() as session:
        rows = await session.scalars(select(OutboxEvent).order_by(OutboxEvent.position))
        return [json.loads(row.body) for row in rows]


async def payloads(store: Store) -> list[tuple[str, dict[str, Any]]]:
    return [(event["eventType"], event["payload"]) for event in await events(store)]
