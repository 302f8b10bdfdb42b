"""The authorization server's install hook: the server (token grant, bearer check, key set) and its `/auth` routes."""

from __future__ import annotations

from chargenet.auth.routes import auth_routes
from chargenet.auth.server import AuthServer
from chargenet.context import AppContext


def install(context: AppContext) -> AuthServer:
    server = AuthServer(settings=context.settings, store=context.store, keys=context.keys, clock=context.clock)
    context.auth = server
    refused = context.service_metrics.rate_limited
    server.rate_limits.count_refusals(lambda limit: refused.labels(limit).inc())
    context.routes.extend(auth_routes(server))
    return server
