"""HTTP request durations for `/metrics`: one ASGI middleware in front of the API, the auth server and the console.

A request is observed when its answer starts (status and headers sent), labelled by method, route template and
status class. That is the time a caller waits before the answer begins; it also keeps the console's event stream,
which stays open for as long as a browser follows it, from counting as one request of hours. A request that raised
counts as `5xx` (the server answers 500); one whose caller went away before any answer is not observed. Paths no
route serves share the route label `unmatched`, so a scanner probing paths adds no series. WebSocket connections
pass through: the edge measures the OCPP messages it handles.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from prometheus_client import Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chargenet.observability.access_log import route_template
from chargenet.observability.metrics import method_label, status_class

UNMATCHED = "unmatched"


class RequestMetrics:
    def __init__(
        self, app: ASGIApp, *, durations: Histogram, monotonic: Callable[[], float] = time.perf_counter
    ) -> None:
        self.app = app
        self.durations = durations
        self.monotonic = monotonic

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = self.monotonic()
        answered = False

        async def observed_send(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start" and not answered:
                answered = True
                self._observe(scope, int(message["status"]), self.monotonic() - started)
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        except Exception:
            if not answered:
                self._observe(scope, 500, self.monotonic() - started)
            raise

    def _observe(self, scope: Scope, status: int, seconds: float) -> None:
        route = route_template(scope) or UNMATCHED
        self.durations.labels(method_label(scope["method"]), route, status_class(status)).observe(seconds)
