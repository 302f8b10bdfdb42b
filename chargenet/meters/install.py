"""The meters' install hook: the poller worker, its health and its metrics."""

from __future__ import annotations

from chargenet.context import AppContext
from chargenet.meters.runtime import MeterMetrics, MeterPolling


def install(context: AppContext) -> MeterPolling:
    polling = MeterPolling(context.store, context.outbox, context.clock)
    context.workers.append(polling)
    context.health_checks.append(polling.health)
    context.metrics.register(MeterMetrics(polling))
    return polling
