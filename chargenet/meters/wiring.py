"""Plugging the meters into the composition root: the poller worker, its health and its metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chargenet.meters.runtime import MeterMetrics, MeterPolling

if TYPE_CHECKING:
    from chargenet.app import AppContext


def install(context: AppContext) -> MeterPolling:
    polling = MeterPolling(context.store, context.outbox, context.clock)
    context.workers.append(polling)
    context.health_checks.append(polling.health)
    context.metrics.register(MeterMetrics(polling))
    return polling
