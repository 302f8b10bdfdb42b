"""The edge's install hook: the `/ocpp/{stationId}` route, the message-log, idle and command-relay workers, and a
clean shutdown that closes every station and upstream link."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import Gauge
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from chargenet.context import AppContext
from chargenet.edge.authorizers import load_authorizers
from chargenet.edge.connection import OwnFaults
from chargenet.edge.hub import Edge, IdleSweeper
from chargenet.edge.messagelog import MessageLog
from chargenet.edge.protocol.frames import FrameLimits
from chargenet.edge.relay import CommandRelay
from chargenet.edge.server import ocpp_route


def install(context: AppContext) -> Edge:
    message_log = MessageLog(context.store, context.clock)
    edge = Edge(
        context.store,
        context.clock,
        context.outbox,
        context.keys,
        limits=FrameLimits(max_frame_bytes=context.settings.ocpp_max_frame),
        authorizers=load_authorizers(),
        message_log=message_log,
    )
    context.edge = edge
    context.upstream_links = edge
    context.routes.append(ocpp_route(edge))
    context.workers.append(message_log)
    context.workers.append(IdleSweeper(edge))
    context.workers.append(
        CommandRelay(context.store, context.clock, lambda: set(edge.connected_stations), edge.command_here)
    )
    context.on_shutdown.insert(0, edge.close)
    _register_metrics(context, edge)
    return edge


def _register_metrics(context: AppContext, edge: Edge) -> None:
    Gauge(
        "chargenet_ocpp_connected_stations", "Stations connected to this process", registry=context.metrics
    ).set_function(lambda: len(edge.connected_stations))
    Gauge(
        "chargenet_ocpp_unexpected_transitions",
        "Connector status transitions the OCPP 1.6 table does not expect, since start",
        registry=context.metrics,
    ).set_function(lambda: edge.transitions.total_unexpected)
    Gauge(
        "chargenet_ocpp_message_log_dropped", "Frames dropped from a full message-log buffer", registry=context.metrics
    ).set_function(lambda: edge.message_log.dropped)
    context.metrics.register(_OwnFaultsCollector(edge.own_faults))


class _OwnFaultsCollector(Collector):
    def __init__(self, faults: OwnFaults) -> None:
        self._faults = faults

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "chargenet_ocpp_own_faults",
            "OCPP calls answered InternalError or GenericError through chargenet's own fault (each one is logged)",
            labels=["code", "action"],
        )
        for (code, action), count in sorted(self._faults.counts.items()):
            family.add_metric([code, action], count)
        yield family
