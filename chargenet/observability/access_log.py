"""The access log: one line per HTTP request, and the request id that every line of that request carries.

An ASGI middleware rather than uvicorn's access log (which `chargenet serve` keeps off, so no request is logged
twice): it knows the route's template once the app has routed the request, the id, and the time the app took.
The id is the caller's `X-Request-ID` when it is sane (at most 128 characters a log line and a header can hold
as they are), else a new UUID; the response echoes it, so a caller can quote it when reporting a problem.
WebSocket connections pass through untouched: the edge logs a station's connection itself.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chargenet.domain.log_uploads import redacted_path
from chargenet.observability import log_context

REQUEST_ID_HEADER = b"x-request-id"
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._~:;/+=@-]{1,128}")

log = logging.getLogger("chargenet.access")


def _new_request_id() -> str:
    return str(uuid.uuid4())


def request_id_from(header: bytes | None, new_id: Callable[[], str] = _new_request_id) -> str:
    """The caller's request id when it is sane, else a new one: an id is also a log field, and a forged one
    (a line break, a megabyte) must not forge or flood the log."""
    if header is not None and _SANE_REQUEST_ID.fullmatch(header.decode("latin-1")):
        return header.decode("ascii")
    return new_id()


def route_template(scope: Scope) -> str | None:
    """The template of the route that served the request (`/api/v1/sites/{site_id}`), None when none did.

    A mount of an app without routes of its own (the console's static files) serves every path under it:
    `/console/static/{path}`. A mount of a router that found no route for the path served nothing."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if route is None or not isinstance(path, str):
        return None
    # A mount's routes are relative to it; `root_path` has grown by each mount's prefix on the way in.
    root_path = str(scope.get("root_path", ""))
    server_root = str(scope.get("app_root_path", ""))
    if isinstance(route, Mount):
        return None if route.routes else root_path.removeprefix(server_root) + "/{path}"
    return root_path.removeprefix(server_root) + path


class AccessLog:
    def __init__(
        self,
        app: ASGIApp,
        *,
        enabled: bool = True,
        new_id: Callable[[], str] = _new_request_id,
        monotonic: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.app = app
        self.enabled = enabled
        self.new_id = new_id
        self.monotonic = monotonic

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = next((value for name, value in scope["headers"] if name == REQUEST_ID_HEADER), None)
        request_id = request_id_from(header, self.new_id)
        encoded = request_id.encode("ascii")
        status: int | None = None

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != REQUEST_ID_HEADER]
                message = {**message, "headers": [*headers, (REQUEST_ID_HEADER, encoded)]}
            await send(message)

        token = log_context.request_id.set(request_id)
        started = self.monotonic()
        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            # The server answers 500 for what escaped the app. A request cancelled because its client went away
            # keeps no status: nothing was answered.
            status = status or 500
            raise
        finally:
            # A line the logger would drop is not built (a bench or a deployment logging at `warning`).
            if self.enabled and log.isEnabledFor(logging.INFO):
                self._log(scope, status, (self.monotonic() - started) * 1000)
            log_context.request_id.reset(token)

    def _log(self, scope: Scope, status: int | None, duration_ms: float) -> None:
        method, path = scope["method"], redacted_path(scope["path"])
        fields: dict[str, Any] = {"method": method, "path": path}
        template = route_template(scope)
        if template is not None:
            fields["route"] = template
        client = scope.get("client")
        fields.update(
            status=status,
            duration_ms=round(duration_ms, 1),
            client=client[0] if client else None,
        )
        log.info(f"{method} {path} {status or '-'}", extra={"fields": fields})
