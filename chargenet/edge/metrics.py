"""The edge in `/metrics`: stations and upstream links of this process, the OCPP calls it handled, its faults.

Counts are read from the edge at scrape time, so a scrape costs no store query and a frame no extra work. Call
durations are labelled by peer (`station`, `upstream`) and OCPP 1.6 action; any other action a peer names is
`other`, so nothing a station sends adds a series.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from chargenet.domain.certificate_requests import CsrRefusal
from chargenet.domain.security_profiles import Refusal
from chargenet.edge.connection import CallTimer
from chargenet.edge.hub import Edge
from chargenet.edge.ocpp16.frames import known_actions
from chargenet.observability.metrics import OTHER, REQUEST_BUCKETS

STATION = "station"
UPSTREAM = "upstream"


class CallDurations:
    """`chargenet_ocpp_call_duration_seconds`: a peer's CALL from its arrival to our answer, refusals included."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._histogram = Histogram(
            "chargenet_ocpp_call_duration_seconds",
            "Time from a peer's OCPP CALL arriving until its answer is ready, by peer and action",
            ["peer", "action"],
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )

    def timer(self, peer: str) -> CallTimer:
        actions = known_actions()
        # One child per action, looked up without the labels() lock and tuple on every frame.
        children: dict[str, Histogram] = {}

        def observe(action: str, seconds: float) -> None:
            if action not in actions:
                action = OTHER
            child = children.get(action)
            if child is None:
                child = children[action] = self._histogram.labels(peer, action)
            child.observe(seconds)

        return observe


class EdgeCollector(Collector):
    def __init__(self, edge: Edge) -> None:
        self._edge = edge

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        edge = self._edge
        links = edge.upstream_links
        yield GaugeMetricFamily(
            "chargenet_ocpp_connected_stations", "Stations connected to this process", value=edge.connected_count
        )
        upstream = GaugeMetricFamily(
            "chargenet_ocpp_upstream_links",
            "Upstream links of this process's stations, connected (up) or trying to connect (down)",
            labels=["state"],
        )
        upstream.add_metric(["up"], links.connected)
        upstream.add_metric(["down"], links.open - links.connected)
        yield upstream
        yield CounterMetricFamily(
            "chargenet_ocpp_upstream_connects", "Upstream links that connected", value=links.connects
        )
        yield CounterMetricFamily(
            "chargenet_ocpp_upstream_connect_failures",
            "Attempts to connect an upstream link that failed",
            value=links.failures,
        )
        yield CounterMetricFamily(
            "chargenet_ocpp_unexpected_transitions",
            "Connector status transitions the OCPP 1.6 table does not expect",
            value=edge.transitions.total_unexpected,
        )
        yield CounterMetricFamily(
            "chargenet_ocpp_message_log_dropped",
            "Frames the message log dropped (its buffer full, or a batch the store refused)",
            value=edge.message_log.dropped,
        )
        yield CounterMetricFamily(
            "chargenet_ocpp_meter_samples_dropped",
            "Meter-value samples dropped from a full message-log buffer or a batch the store refused",
            value=edge.message_log.samples_dropped,
        )
        faults = CounterMetricFamily(
            "chargenet_ocpp_own_faults",
            "OCPP calls answered InternalError or GenericError through chargenet's own fault (each one is logged)",
            labels=["code", "action"],
        )
        for (code, action), count in sorted(edge.own_faults.counts.items()):
            faults.add_metric([code, action], count)
        yield faults
        security = CounterMetricFamily(
            "chargenet_ocpp_security_events",
            "SecurityEventNotifications received from OCPP 2.0.1 stations, by the station's event type",
            labels=["type"],
        )
        for kind, count in sorted(edge.security_events.counts.items()):
            security.add_metric([kind], count)
        yield security
        refused = CounterMetricFamily(
            "chargenet_ocpp_handshakes_refused",
            "Station handshakes refused by their security profile, by reason (each one is logged with its station)",
            labels=["reason"],
        )
        for refusal in Refusal:
            refused.add_metric([refusal.value], edge.admission.refusals[refusal.value])
        yield refused
        certificates = edge.certificates
        signed = CounterMetricFamily(
            "chargenet_station_certificates_signed", "Station CSRs signed by the company's station CA"
        )
        signed.add_metric([], certificates.signed)
        yield signed
        csrs_refused = CounterMetricFamily(
            "chargenet_station_csrs_refused",
            "Station CSRs refused, by reason (each one is logged with its station)",
            labels=["reason"],
        )
        for reason in CsrRefusal:
            csrs_refused.add_metric([reason.value], certificates.refusals[reason.value])
        yield csrs_refused
        expiring = GaugeMetricFamily(
            "chargenet_station_certificates_expiring",
            "Stations whose latest certificate signed here expires within 14 days (as of the renewal worker's last "
            "look, hourly): alert on it above 0",
        )
        expiring.add_metric([], certificates.expiring_soon)
        yield expiring
        yield from _site_power(edge)


def _site_power(edge: Edge) -> Iterator[GaugeMetricFamily]:
    """The last round of each site this process runs the allocator for (its lease holder on PostgreSQL)."""
    limit = GaugeMetricFamily(
        "chargenet_site_power_limit_amperes", "A circuit's limit, per phase", labels=["site", "circuit"]
    )
    allocated = GaugeMetricFamily(
        "chargenet_site_power_allocated_amperes",
        "What the allowances below a circuit add up to on one phase, as the last round shared it",
        labels=["site", "circuit", "phase"],
    )
    paused = GaugeMetricFamily(
        "chargenet_site_sessions_paused",
        "Sessions paused on the stations hung on a circuit, as the last round decided",
        labels=["site", "circuit"],
    )
    measured = GaugeMetricFamily(
        "chargenet_site_power_measured_amperes",
        "What a circuit's grid meter measured on one phase at the last round",
        labels=["site", "circuit", "phase"],
    )
    fallback = GaugeMetricFamily(
        "chargenet_site_power_meter_fallback",
        "1 while a circuit's grid meter tells nothing (silent or nonsense) and the circuit falls back to its limit",
        labels=["site", "circuit", "reason"],
    )
    figures = edge.power.figures if edge.power is not None else {}
    for site_id, site in sorted(figures.items()):
        for circuit_id, amps in sorted(site.limits.items()):
            limit.add_metric([site_id, circuit_id], amps)
        for (circuit_id, phase), amps in sorted(site.allocated.items()):
            allocated.add_metric([site_id, circuit_id, phase], amps)
        for circuit_id, count in sorted(site.paused.items()):
            paused.add_metric([site_id, circuit_id], count)
        for (circuit_id, phase), amps in sorted(site.measured.items()):
            measured.add_metric([site_id, circuit_id, phase], amps)
        for circuit_id, reason in sorted(site.falling_back.items()):
            fallback.add_metric([site_id, circuit_id, reason], 1.0)
    yield limit
    yield allocated
    yield paused
    yield measured
    yield fallback


def register(registry: CollectorRegistry, edge: Edge) -> None:
    registry.register(EdgeCollector(edge))
