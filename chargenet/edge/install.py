"""The edge's install hook: the `/ocpp/{stationId}` route, the message-log, idle, command-relay, site power and
certificate renewal workers, and a clean shutdown that closes every station and upstream link."""

from __future__ import annotations

from datetime import timedelta

from chargenet.context import AppContext
from chargenet.domain.power import Settings as PowerSettings
from chargenet.edge import metrics
from chargenet.edge.authorizers import load_authorizers
from chargenet.edge.certificates import CertificateRenewal
from chargenet.edge.hub import Edge, IdleSweeper
from chargenet.edge.messagelog import MessageLog
from chargenet.edge.ocpp16.frames import FrameLimits
from chargenet.edge.power import PowerController
from chargenet.edge.relay import CommandRelay
from chargenet.edge.server import ocpp_route
from chargenet.power_changes import run_rounds_on_changes


def install(context: AppContext) -> Edge:
    message_log = MessageLog(context.store, context.clock)
    durations = metrics.CallDurations(context.metrics)
    edge = Edge(
        context.store,
        context.clock,
        context.outbox,
        context.keys,
        limits=FrameLimits(max_frame_bytes=context.settings.ocpp_max_frame),
        authorizers=load_authorizers(),
        message_log=message_log,
        time_station_call=durations.timer(metrics.STATION),
        time_upstream_call=durations.timer(metrics.UPSTREAM),
        trusted_proxies=context.settings.forwarded_allow_ips,
    )
    context.edge = edge
    context.routes.append(ocpp_route(edge))
    context.workers.append(message_log)
    context.workers.append(IdleSweeper(edge))
    context.workers.append(
        CommandRelay(context.store, context.clock, lambda: set(edge.connected_stations), edge.command_here)
    )
    power = PowerController(
        edge, settings=PowerSettings(meter_silent_after=timedelta(seconds=context.settings.grid_meter_silent_s))
    )
    run_rounds_on_changes(power)
    edge.power = power
    edge.power_listeners.append(power.poke)
    context.workers.append(power)
    renew_before = timedelta(days=context.settings.certificate_renewal_days)
    context.workers.append(
        CertificateRenewal(context.store, context.clock, edge, edge.certificates, renew_before=renew_before)
    )
    context.on_shutdown.insert(0, edge.close)
    context.on_shutdown.insert(0, power.release)
    metrics.register(context.metrics, edge)
    return edge
