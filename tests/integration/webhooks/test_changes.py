"""A change of a webhook made through a use case alone wakes this process's lanes once its unit of work commits,
and never when it rolls back; no face has a part in it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import insert

from chargenet.clock import ManualClock
from chargenet.services import webhook_dead_letters
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import WebhookDeadLetter
from chargenet.webhooks.changes import wake_on_changes
from tests.integration.webhooks.harness import Harness, make_harness


class Lanes:
    """This process's lanes as the use cases reach them (`ports.WebhookLanes`), counting the pokes."""

    def __init__(self) -> None:
        self.pokes = 0

    def poke(self) -> None:
        self.pokes += 1


@pytest.fixture
async def harness(store: Store, clock: ManualClock, tmp_path: Path) -> Harness:
    return await make_harness(store, clock, tmp_path)


@pytest.fixture
def lanes() -> Lanes:
    lanes = Lanes()
    wake_on_changes(lanes)
    return lanes


async def test_each_change_of_a_webhook_wakes_the_lanes_once_it_has_committed(harness: Harness, lanes: Lanes) -> None:
    store, now = harness.store, harness.clock.now()
    webhook_id = await harness.webhook("http://127.0.0.1:9/hook")
    woken = [lanes.pokes]
    await webhook_service.update_webhook(
        store.transaction,
        OPERATOR,
        harness.keys.credential_cipher(),
        webhook_id,
        now=now,
        allow_private=True,
        event_types=["Authorize", "StopTransaction"],
        enabled=False,  # a settings change and a switch in one unit: one wake-up
    )
    woken.append(lanes.pokes)
    await harness.set_enabled(webhook_id, True)
    woken.append(lanes.pokes)
    async with store.transaction() as session:  # an event the Authorize lane had no room for
        await session.execute(
            insert(WebhookDeadLetter).values(
                webhook_id=webhook_id, event_type="Authorize", event_id="e-1", body="{}", reason="queue_full",
                error="", attempts=0, dead_at=now,
            )
        )  # fmt: skip
    async with store.transaction() as session:
        await webhook_dead_letters.replay_dead_letters(session, OPERATOR, webhook_id, now=now)
    woken.append(lanes.pokes)
    async with store.transaction() as session:
        await webhook_service.delete_webhook(session, OPERATOR, webhook_id, now=now)
    woken.append(lanes.pokes)
    assert woken == [1, 2, 3, 4, 5]


async def test_a_change_that_changes_nothing_or_is_rolled_back_wakes_nobody(harness: Harness, lanes: Lanes) -> None:
    webhook_id = await harness.webhook("http://127.0.0.1:9/hook")
    created = lanes.pokes
    await harness.set_enabled(webhook_id, True)  # enabled already
    with pytest.raises(RuntimeError):
        async with harness.store.transaction() as session:
            await webhook_service.set_enabled(session, OPERATOR, webhook_id, False, now=harness.clock.now())
            assert lanes.pokes == created  # not before the commit
            raise RuntimeError("the unit of work fails")
    assert (created, lanes.pokes) == (1, 1)
