"""Composition root: which parts a process runs, and the one ASGI app that serves them.

`open_context` opens the store (`chargenet.context.open_store`) and installs the parts a serving process runs,
each through its install hook (`chargenet/<part>/install.py`, a function `install(context)`); `chargenet serve`
adds the webhook engine, which is what delivers. `create_app` mounts the operations endpoints, every part's
routes and one `Mount` per face (the API and the console). Nothing else lives here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from chargenet.alerts import install as alerts_install
from chargenet.api.app import create_api
from chargenet.api.problems import http_problem, problem
from chargenet.api.uploads import upload_routes
from chargenet.auth import install as auth_install
from chargenet.clock import Clock
from chargenet.config import Settings
from chargenet.console.app import create_console
from chargenet.console.live import LiveFeed
from chargenet.console.pages import Console
from chargenet.context import AppContext, Worker, open_store
from chargenet.edge import install as edge_install
from chargenet.meters import install as meters_install
from chargenet.observability.access_log import AccessLog
from chargenet.observability.error_kinds import error_kind
from chargenet.observability.health import ComponentHealth, HealthCheck, Level, collect, health_document
from chargenet.observability.readiness import NotReady, Probe, failed_checks, workers_probe
from chargenet.observability.recent import Recent, RecentRefresher
from chargenet.observability.request_metrics import RequestMetrics
from chargenet.outbox.retention import EventRetention
from chargenet.services.audit import AuditRetention
from chargenet.services.directory import ChargePointDirectory
from chargenet.services.operators import Passwords
from chargenet.services.session_requests import SessionRequestRetention
from chargenet.services.station_logs import StationLogRetention
from chargenet.store.db import Store
from chargenet.webhooks.filler import CONSUMER as WEBHOOK_LANES_CONSUMER

__all__ = ["AppContext", "Worker", "create_app", "open_context"]

log = logging.getLogger(__name__)

# `/health` answers from a document refreshed in the background: at most this old, whoever asks how often.
HEALTH_MAX_AGE = 2.0
HEALTH_REFRESH_INTERVAL = 1.0
READY_MAX_AGE = 1.0  # seconds a /health/ready answer is reused
# Bounds the one query of the database checks: a store that hangs is a store that is not there.
DATABASE_TIMEOUT = 2.0


async def open_context(settings: Settings, *, migrate: bool = False, clock: Clock | None = None) -> AppContext:
    """The context of a serving process: the store, then the auth server, the edge and the meters."""
    context = await open_store(settings, migrate=migrate, clock=clock)
    # Without statistics SQLite picks an index by its shape alone: the sessions list read every session of the
    # company's sites and sorted them, where the index of those in progress (or of their start) reads a page.
    await context.store.take_statistics()
    context.health_checks.append(_database_check(context.store))
    # Wakes this process's waits on what other processes commit (PostgreSQL); connects once one subscribes.
    context.workers.append(context.store.listener)
    context.workers.append(
        EventRetention(context.store, context.clock, settings.event_retention_days, consumers=(WEBHOOK_LANES_CONSUMER,))
    )
    context.workers.append(AuditRetention(context.store, context.clock))
    context.workers.append(SessionRequestRetention(context.store, context.clock))
    context.workers.append(
        StationLogRetention(context.store, context.clock, settings.data_dir, settings.log_retention_days)
    )
    auth_install.install(context)
    edge_install.install(context)
    meters_install.install(context)
    alerts_install.install(context)
    return context


async def _ping(store: Store) -> None:
    # A reading unit of work: on SQLite it never queues behind this process's writers for the write lock.
    async with asyncio.timeout(DATABASE_TIMEOUT), store.read() as session:
        await session.execute(text("SELECT 1"))


def _database_check(store: Store) -> HealthCheck:
    async def check() -> list[ComponentHealth]:
        try:
            await _ping(store)
        except Exception as exc:
            return [ComponentHealth("database", Level.FAILING, {"error": error_kind(exc)})]
        return [ComponentHealth("database", Level.OK, {"dialect": store.dialect})]

    return check


def _keys_probe(context: AppContext) -> Probe:
    """Ready while the keys folder holds the keys this process started with, token signing key included."""
    fingerprint = context.keys.fingerprint()

    async def probe() -> None:
        try:
            unchanged = context.keys.fingerprint() == fingerprint
            if context.auth is not None:
                context.auth.signing_keys.refresh()
                context.auth.signing_keys.token_signing_key(context.clock.now())
        except Exception:
            raise NotReady("keys_missing") from None
        if not unchanged:
            raise NotReady("keys_changed")

    return probe


def create_app(
    context: AppContext,
    *,
    console_passwords: Passwords | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> Starlette:
    """The one ASGI app: operations endpoints, then every part's routes, then one mount per face.

    `console_passwords` hashes operators' passwords (tests give a cheap argon2 profile; the default is argon2id's);
    `monotonic` is the clock that ages the `/health` document (tests give a manual one)."""

    async def components() -> list[ComponentHealth]:
        return await collect(context.health_checks)

    recent_health = Recent(components, max_age=HEALTH_MAX_AGE, monotonic=monotonic)
    refresher = RecentRefresher("health-refresh", recent_health, context.clock, HEALTH_REFRESH_INTERVAL)
    # The workers' tasks while the lifespan runs them (None before and after): `/health/ready` watches them.
    running: list[asyncio.Task[None]] | None = None
    probes: dict[str, Probe] = {
        "database": lambda: _ping(context.store),
        "keys": _keys_probe(context),
        "workers": workers_probe(lambda: running),
    }

    async def check_readiness() -> dict[str, str]:
        return await failed_checks(probes)

    # A balancer may ask every process many times a second: one probe a second answers them all.
    readiness = Recent(check_readiness, max_age=READY_MAX_AGE, monotonic=monotonic)

    async def health(_: Request) -> JSONResponse:
        document = health_document(await recent_health.get())
        return JSONResponse(document, status_code=503 if document["status"] == "failing" else 200)

    async def live(_: Request) -> JSONResponse:
        return JSONResponse({"status": "live"})

    async def ready(_: Request) -> Response:
        failed = await readiness.get()
        if not failed:
            return JSONResponse({"status": "ready"})
        detail = ", ".join(f"{name}: {kind}" for name, kind in failed.items())
        return problem(503, "Not ready", detail, checks=failed)

    async def metrics(_: Request) -> Response:
        return Response(generate_latest(context.metrics), media_type=CONTENT_TYPE_LATEST)

    # One live feed per process, whatever number of browsers follow it (the console's live status page).
    live_feed = LiveFeed(context.store.read, context.clock, listener=context.store.listener)
    # One copy of the charge point list per process, which partners poll (`services.directory`).
    pages = context.service_metrics.charge_point_pages
    directory = ChargePointDirectory(context.store, context.clock, counted=lambda source: pages.labels(source).inc())
    context.on_stopping.append(live_feed.end_all)
    routes: list[BaseRoute] = [
        Route("/health", health, methods=["GET"]),
        Route("/health/live", live, methods=["GET"]),
        Route("/health/ready", ready, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *context.routes,
        *upload_routes(context),
        Mount("/api/v1", app=create_api(context, directory)),
        Mount(
            "/console",
            app=create_console(
                Console(
                    context.store.transaction,
                    context.clock,
                    context.settings.public_url,
                    console_passwords or Passwords(),
                    secret_hasher=context.keys.secret_hasher(),
                    read=context.store.read,
                    credential_cipher=context.keys.credential_cipher(),
                    stations=context.edge,
                    webhook_allow_private=context.settings.webhook_allow_private,
                    event_retention_days=context.settings.event_retention_days,
                    grid_meter_silent_s=context.settings.grid_meter_silent_s,
                    webhook_tests=context.webhook_tests,
                    live=live_feed,
                    outbox=context.outbox,
                    upload_url=context.settings.upload_url,
                    data_dir=context.settings.data_dir,
                )
            ),
        ),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[dict[str, Any]]:
        nonlocal running
        stopping = asyncio.Event()
        workers: list[Worker] = [*context.workers, refresher, live_feed, directory]
        tasks = [asyncio.create_task(worker.run(stopping), name=worker.name) for worker in workers]
        running = tasks
        log.info("chargenet started", extra={"fields": {"workers": len(tasks), "url": context.settings.public_url}})
        try:
            yield {}
        finally:
            # Graceful: workers finish the iteration (one transaction) they are in, then return.
            stopping.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            running = None
            for hook in context.on_shutdown:
                await hook()
            log.info("chargenet stopped")

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return http_problem(request, exc)

    # A path no part serves is a problem like every other error (the API and the console answer their own).
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: on_http_error},
        middleware=[
            Middleware(AccessLog, enabled=context.settings.access_log),
            Middleware(RequestMetrics, durations=context.service_metrics.http_requests),
        ],
    )
