"""Webhook worker health (service.md §8) for `GET /health` and Prometheus metrics for `GET /metrics`.

Lane state (size, last consumption, last request and its duration) is read from the store, so every process
reports every lane, whichever process drains it. Counters (attempts, successes, failures, dead letters) are
per process, as Prometheus counters are: dead letters are those this process's transactions committed, for
any reason (`retries_exhausted`, `queue_full`, `unsubscribed`). So is the histogram of request durations, by webhook
only: a lane's event type tells nothing about how fast its receiver answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from sqlalchemy import select

from chargenet.observability.health import ComponentHealth, HealthCheck
from chargenet.observability.health import Level as HealthLevel
from chargenet.observability.metrics import REQUEST_BUCKETS
from chargenet.store.db import Store
from chargenet.store.models import Webhook, WebhookLane
from chargenet.webhooks.failures import failure_kind
from chargenet.webhooks.health import Level, queue_size_level, request_duration_level, worst
from chargenet.webhooks.lane import Delivered
from chargenet.webhooks.queue import watch_dead_letters
from chargenet.webhooks.sender import AttemptResult


@dataclass(frozen=True, slots=True)
class LaneHealth:
    webhook_id: str
    site_id: str
    event_type: str
    enabled: bool
    queue_size: int
    last_consumed_at: datetime | None
    last_request_at: datetime | None
    last_request_ms: float | None
    last_error: str | None
    head_attempts: int

    @property
    def queue_level(self) -> Level:
        return queue_size_level(self.queue_size)

    @property
    def duration_level(self) -> Level:
        return request_duration_level(self.last_request_ms)

    @property
    def level(self) -> Level:
        return worst(self.queue_level, self.duration_level)

    def to_json(self) -> dict[str, object]:
        return {
            "webhookId": self.webhook_id,
            "siteId": self.site_id,
            "eventType": self.event_type,
            "enabled": self.enabled,
            "queueSize": self.queue_size,
            "queueSizeLevel": self.queue_level.value,
            "lastQueueConsumption": self.last_consumed_at.isoformat() if self.last_consumed_at else None,
            "lastRequest": self.last_request_at.isoformat() if self.last_request_at else None,
            "lastRequestDurationMs": round(self.last_request_ms, 1) if self.last_request_ms is not None else None,
            "lastRequestDurationLevel": self.duration_level.value,
            "headAttempts": self.head_attempts,
            # Its kind only: the message can carry what the partner answered, and /health is public.
            "lastError": failure_kind(self.last_error),
        }


async def lane_health(store: Store) -> list[LaneHealth]:
    # A reading unit of work: /health refreshes every second, and on SQLite a transaction would take the write lock.
    async with store.read() as session:
        rows = await session.execute(
            select(WebhookLane, Webhook.site_id, Webhook.enabled)
            .join(Webhook, Webhook.id == WebhookLane.webhook_id)
            .order_by(WebhookLane.id)
        )
        return [
            LaneHealth(
                webhook_id=lane.webhook_id,
                site_id=site_id,
                event_type=lane.event_type,
                enabled=bool(enabled),
                queue_size=lane.size,
                last_consumed_at=lane.last_consumed_at,
                last_request_at=lane.last_request_at,
                last_request_ms=lane.last_request_ms,
                last_error=lane.last_error,
                head_attempts=lane.head_attempts,
            )
            for lane, site_id, enabled in rows
        ]


def health_check(store: Store) -> HealthCheck:
    """A `HealthCheck` for the app: one component per lane; a lane over a threshold or retrying is
    `degraded`, never `failing` (a partner being down does not stop this process from doing its job)."""

    async def check() -> list[ComponentHealth]:
        components = []
        for lane in await lane_health(store):
            troubled = lane.level is not Level.OK or lane.head_attempts > 0
            components.append(
                ComponentHealth(
                    f"webhook:{lane.webhook_id}:{lane.event_type}",
                    HealthLevel.DEGRADED if troubled and lane.enabled else HealthLevel.OK,
                    lane.to_json(),
                )
            )
        return components

    return check


class WebhookMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["webhook_id", "event_type"]
        self.attempts = Counter("chargenet_webhook_attempts", "Webhook delivery attempts", labels, registry=registry)
        self.successes = Counter("chargenet_webhook_successes", "Attempts answered with 2xx", labels, registry=registry)
        self.failures = Counter("chargenet_webhook_failures", "Attempts that failed", labels, registry=registry)
        self.dead_letters = Counter(
            "chargenet_webhook_dead_letters",
            "Events moved to the dead letters",
            [*labels, "reason"],
            registry=registry,
        )
        self.durations = Histogram(
            "chargenet_webhook_request_duration_seconds",
            "Duration of webhook delivery attempts, answered or not",
            ["webhook_id"],
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )
        self.queue_size = Gauge("chargenet_webhook_queue_size", "Events waiting in the lane", labels, registry=registry)
        self.last_consumed = Gauge(
            "chargenet_webhook_last_queue_consumption_timestamp_seconds",
            "When the lane last let an event go (delivered or dead-lettered)",
            labels,
            registry=registry,
        )
        self.last_request = Gauge(
            "chargenet_webhook_last_request_timestamp_seconds", "When the last request ended", labels, registry=registry
        )
        self.last_duration = Gauge(
            "chargenet_webhook_last_request_duration_seconds", "Duration of the last request", labels, registry=registry
        )

        watch_dead_letters(self)

    def attempt(self, webhook_id: str, event_type: str, result: AttemptResult) -> None:
        self.attempts.labels(webhook_id, event_type).inc()
        self.durations.labels(webhook_id).observe(result.duration_ms / 1000)
        if isinstance(result.outcome, Delivered):
            self.successes.labels(webhook_id, event_type).inc()
        else:
            self.failures.labels(webhook_id, event_type).inc()

    def dead_lettered(self, webhook_id: str, event_type: str, reason: str) -> None:
        self.dead_letters.labels(webhook_id, event_type, reason).inc()

    async def refresh(self, store: Store) -> None:
        for lane in await lane_health(store):
            labels = (lane.webhook_id, lane.event_type)
            self.queue_size.labels(*labels).set(lane.queue_size)
            if lane.last_consumed_at is not None:
                self.last_consumed.labels(*labels).set(lane.last_consumed_at.timestamp())
            if lane.last_request_at is not None:
                self.last_request.labels(*labels).set(lane.last_request_at.timestamp())
            if lane.last_request_ms is not None:
                self.last_duration.labels(*labels).set(lane.last_request_ms / 1000)
