"""Dead letters are kept 30 days, then purged (decisions.md §4)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.store.db import Store
from chargenet.store.models import WebhookDeadLetter
from chargenet.webhooks.install import DeadLetterRetention
from chargenet.webhooks.lane import refused_at_full_lane
from chargenet.webhooks.queue import store_dead_letter
from tests.integration.webhooks.harness import make_harness


async def test_dead_letters_older_than_30_days_are_purged_and_newer_ones_kept(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    webhook_id = await harness.webhook("http://127.0.0.1:9/hook")
    for event_id, age in (("old", timedelta(days=30, seconds=1)), ("new", timedelta(days=29, hours=23))):
        async with store.transaction() as session:
            letter = refused_at_full_lane(event_id)
            await store_dead_letter(session, webhook_id, "Authorize", letter, "{}", clock.now() - age)
    await DeadLetterRetention(store, clock).run_once()
    async with store.transaction() as session:
        kept = list(await session.scalars(select(WebhookDeadLetter.event_id)))
    assert kept == ["new"]
