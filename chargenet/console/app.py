"""The management console: a Starlette app the composition root mounts at `{public URL}/console`.

Server-rendered pages (Jinja2, autoescaped: everything partners and stations supply is text, never markup),
htmx vendored for in-page changes, no inline script, every answer with the headers of `protection`.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chargenet.console import protection
from chargenet.console.pages import EXCEPTION_HANDLERS, STATIC, Console
from chargenet.console.views import (
    alerts,
    applications,
    audit,
    auth,
    connectors,
    groups,
    message_log,
    meters,
    operators,
    overview,
    sessions,
    site_power,
    sites,
    stations,
    time_zones,
    webhooks,
)


class SecurityHeaders:
    """Adds `protection.SECURITY_HEADERS` to every answer, and `no-store` to pages: a page may show a secret
    once, and neither the back button nor a shared cache may show it again."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope["path"].startswith(f"{scope.get('root_path', '')}/static/") or "/static/" in scope["path"]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                for name, value in protection.SECURITY_HEADERS.items():
                    if name.encode() not in names:
                        headers.append((name.encode(), value.encode()))
                if not static:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def create_console(console: Console) -> Starlette:
    routes = [
        *overview.routes(),
        *auth.routes(),
        *time_zones.routes(),
        *operators.routes(),
        *applications.routes(),
        *groups.routes(),
        *webhooks.routes(),
        *alerts.routes(),
        *audit.routes(),
        *sites.routes(),
        *site_power.routes(),
        *stations.routes(),
        *connectors.routes(),
        *message_log.routes(),
        *sessions.routes(),
        *meters.routes(),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(SecurityHeaders)], exception_handlers=EXCEPTION_HANDLERS)
    app.state.console = console
    return app
