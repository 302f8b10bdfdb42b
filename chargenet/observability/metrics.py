"""What `/metrics` shows of every process, whatever parts it runs: the process itself, the build, HTTP requests and
the store's units of work. The parts add their own instruments to the same registry in their install hooks.

Labels take values from short, fixed sets (route templates, status classes, OCPP actions, configured webhooks), never
from what a caller or a station sends (paths, station ids, idTags, message ids), so a scrape stays the same size
however much traffic the process sees. docs/metrics.md lists every metric and what to alert on.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

from chargenet import __version__

# Requests and webhook deliveries: from a few milliseconds to the 10 s of a webhook request's timeout.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# A unit of work on SQLite takes well under a millisecond; one that waits for the write lock, seconds.
STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)

HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER = "other"
_STATUS_CLASSES = ("1xx", "2xx", "3xx", "4xx", "5xx")


def status_class(status: int) -> str:
    """`404` -> `"4xx"`; a code outside 100-599 -> `"other"`."""
    index = status // 100 - 1
    return _STATUS_CLASSES[index] if 0 <= index < len(_STATUS_CLASSES) else OTHER


def method_label(method: str) -> str:
    """The method as it came when HTTP defines it, else `"other"`: a caller can send any token as a method."""
    return method if method in HTTP_METHODS else OTHER


class ServiceMetrics:
    """The instruments every process registers once, on the registry its `/metrics` serves."""

    def __init__(self, registry: CollectorRegistry, *, version: str = __version__) -> None:
        self.registry = registry
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
        Gauge(
            "chargenet_build_info", "The running chargenet's version (always 1)", ["version"], registry=registry
        ).labels(version).set(1)
        self.http_requests = Histogram(
            "chargenet_http_request_duration_seconds",
            "Time from a request's arrival until its answer starts, by route template and status class",
            ["method", "route", "status_class"],
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )
        self.rate_limited = Counter(
            "chargenet_api_rate_limited",
            "API requests refused with 429 because the application's rate limit was spent, by the class of its "
            "limit: the default quota or one of its own",
            ["limit"],
            registry=registry,
        )
        self.charge_point_pages = Counter(
            "chargenet_charge_point_pages",
            "Pages of GET /charge-points, by where they were read: the process's copy (memory) or the store",
            ["source"],
            registry=registry,
        )
        self.store_units = Histogram(
            "chargenet_store_unit_duration_seconds",
            "Duration of the store's units of work (read-write transactions and reads), waiting for a lock included",
            ["unit"],
            buckets=STORE_BUCKETS,
            registry=registry,
        )
