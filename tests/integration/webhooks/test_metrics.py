"""The webhook metrics of `GET /metrics`: the dead-letter counter counts every dead letter, whatever put it there,
by reason; every attempt lands in the request-duration histogram of its webhook."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import ManualClock
from chargenet.store.db import Store
from chargenet.webhooks.metrics import WebhookMetrics
from tests.integration.webhooks.harness import Harness, drain, make_harness
from tests.support.receiver import Receiver, Reply, run_receiver


def _dead_letters(registry: CollectorRegistry, webhook_id: str, reason: str) -> float | None:
    labels = {"webhook_id": webhook_id, "event_type": "Authorize", "reason": reason}
    return registry.get_sample_value("chargenet_webhook_dead_letters_total", labels)


async def queued_in_a_disabled_lane(harness: Harness, metrics: WebhookMetrics, *tags: str) -> str:
    """The id of a disabled webhook for Authorize and StopTransaction whose lane an engine counting into `metrics`
    has filled with an Authorize event for each of `tags`."""
    webhook_id = await harness.webhook("http://127.0.0.1:9/hook", events="Authorize,StopTransaction")
    await harness.set_enabled(webhook_id, False)
    await harness.publish(*tags)
    engine = harness.engine(metrics=metrics)
    await engine.fill_once()
    await engine.sender.aclose()
    return webhook_id


async def one_event_drained(harness: Harness, receiver: Receiver, metrics: WebhookMetrics) -> str:
    """The id of a webhook to `receiver` whose lane an engine counting into `metrics` has sent event A down, and
    stepped until empty (jumping the clock to each retry)."""
    webhook_id = await harness.webhook(receiver.url)
    await harness.publish("A")
    engine = harness.engine(metrics=metrics)
    await engine.fill_once()
    await engine.lease_once()
    await drain(engine, await harness.lane_id(webhook_id), harness.clock)
    await engine.sender.aclose()
    return webhook_id


async def test_event_refused_at_a_full_lane_counts_as_a_queue_full_dead_letter(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    registry = CollectorRegistry()
    harness = await make_harness(store, clock, tmp_path)
    webhook_id = await harness.webhook("http://127.0.0.1:9/hook")
    await harness.set_enabled(webhook_id, False)
    await harness.publish(*[f"T{i}" for i in range(1001)])
    engine = harness.engine(metrics=WebhookMetrics(registry))
    for _ in range(3):
        await engine.fill_once()
    await engine.sender.aclose()
    assert _dead_letters(registry, webhook_id, "queue_full") == 1


async def test_events_left_in_an_unsubscribed_lane_count_as_unsubscribed_dead_letters(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    registry = CollectorRegistry()
    metrics = WebhookMetrics(registry)  # counts the dead letters of the lane dropped below: it must live until then
    harness = await make_harness(store, clock, tmp_path)
    webhook_id = await queued_in_a_disabled_lane(harness, metrics, "A", "B")
    await harness.subscribe(webhook_id, "StopTransaction")
    assert _dead_letters(registry, webhook_id, "unsubscribed") == 2


async def test_event_out_of_retries_counts_as_a_retries_exhausted_dead_letter(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    registry = CollectorRegistry()
    harness = await make_harness(store, clock, tmp_path)
    async with run_receiver(lambda _r: Reply(500)) as receiver:
        webhook_id = await one_event_drained(harness, receiver, WebhookMetrics(registry))
    assert _dead_letters(registry, webhook_id, "retries_exhausted") == 1


async def test_dead_letter_rolled_back_is_not_counted(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    registry = CollectorRegistry()
    metrics = WebhookMetrics(registry)  # counts the dead letters of the lane dropped below: it must live until then
    harness = await make_harness(store, clock, tmp_path)
    webhook_id = await queued_in_a_disabled_lane(harness, metrics, "A")

    @asynccontextmanager
    async def rolled_back() -> AsyncIterator[AsyncSession]:
        async with store.transaction() as session:
            yield session
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        await harness.subscribe(webhook_id, "StopTransaction", transaction=rolled_back)
    assert _dead_letters(registry, webhook_id, "unsubscribed") is None


async def test_every_attempt_lands_in_the_duration_histogram_of_its_webhook(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    registry = CollectorRegistry()
    harness = await make_harness(store, clock, tmp_path)
    replies = iter([Reply(500), Reply(204)])
    async with run_receiver(lambda _r: next(replies)) as receiver:
        webhook_id = await one_event_drained(harness, receiver, WebhookMetrics(registry))
    labels = {"webhook_id": webhook_id}
    assert registry.get_sample_value("chargenet_webhook_request_duration_seconds_count", labels) == 2
