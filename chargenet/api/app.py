from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import FastAPI

from chargenet import __version__
from chargenet.api import openapi
from chargenet.api.input import InputCheck
from chargenet.api.problems import install_problem_handlers
from chargenet.api.rate_limit_headers import RateLimitHeaders
from chargenet.api.routes import (
    applications,
    charge_point_commands,
    charge_points,
    circuits,
    groups,
    logs,
    meters,
    sessions,
    sites,
    station_certificates,
    station_commands,
    station_logs,
    stations,
    webhooks,
)

if TYPE_CHECKING:
    from chargenet.context import AppContext
    from chargenet.services.directory import ChargePointDirectory


def create_api(context: AppContext, directory: ChargePointDirectory | None = None) -> FastAPI:
    """The `/api/v1` application. Each resource adds its router in `chargenet/api/routes/`. With `directory`
    (run by the caller) the charge point list is served from it."""
    api = FastAPI(
        title="chargenet API",
        version=__version__,
        openapi_url="/openapi.json",
        docs_url="/docs",
        redoc_url=None,
        servers=[{"url": context.settings.base_url}],
    )
    api.state.context = context
    api.state.directory = directory
    install_problem_handlers(api)
    api.add_middleware(InputCheck)
    api.add_middleware(RateLimitHeaders)
    routers = (
        sites.router,
        stations.router,
        charge_points.router,
        applications.router,
        groups.router,
        sessions.router,
        charge_point_commands.router,
        station_commands.router,
        station_certificates.router,
        station_logs.router,
        meters.router,
        webhooks.router,
        logs.router,
        circuits.router,
    )
    for router in routers:
        api.include_router(router)
    openapi.install(api, routers, context.settings.auth_url)
    return api
