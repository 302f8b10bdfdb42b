"""Composition root: opens the store and keys, wires the parts, builds the one ASGI app.

Everything that lives for the whole process is in `AppContext`; parts receive what they need from it
explicitly, so tests can build a context with a ManualClock and a scratch store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import select, text
from sqlalchemy.dialects import postgresql, sqlite
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from chargenet.auth.routes import auth_routes
from chargenet.auth.server import AuthServer
from chargenet.clock import Clock, SystemClock
from chargenet.config import Settings
from chargenet.errors import KeysMismatch
from chargenet.keys import KeyStore
from chargenet.meters.wiring import install as install_meters
from chargenet.observability.health import ComponentHealth, HealthCheck, Level, health_document
from chargenet.outbox import Outbox
from chargenet.outbox.retention import EventRetention
from chargenet.services.operators import Passwords
from chargenet.store import schema
from chargenet.store.db import Store
from chargenet.store.models import StoreSetting
from chargenet.webhooks.filler import CONSUMER as WEBHOOK_LANES_CONSUMER

if TYPE_CHECKING:
    from chargenet.edge.hub import Edge
    from chargenet.webhooks.engine import DeliveryEngine

log = logging.getLogger(__name__)

KEYS_FINGERPRINT = "keys_fingerprint"


class Worker(Protocol):
    name: str

    async def run(self, stopping: asyncio.Event) -> None: ...


@dataclass
class AppContext:
    settings: Settings
    store: Store
    keys: KeyStore
    clock: Clock
    outbox: Outbox
    metrics: CollectorRegistry = field(default_factory=CollectorRegistry)
    workers: list[Worker] = field(default_factory=list)
    health_checks: list[HealthCheck] = field(default_factory=list)
    routes: list[BaseRoute] = field(default_factory=list)
    on_shutdown: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    auth: AuthServer | None = None
    edge: Edge | None = None
    webhooks: DeliveryEngine | None = None  # installed by `chargenet serve`, which is what delivers them

    async def close(self) -> None:
        if self.auth is not None:
            self.auth.close()
        await self.store.dispose()


async def open_context(settings: Settings, *, migrate: bool = False, clock: Clock | None = None) -> AppContext:
    """Open keys and store for `serve` and `admin`: create a new store at the latest schema, refuse an outdated
    (unless `migrate`) or newer one, and refuse a keys folder other than the one the store was set up with."""
    keys = KeyStore(settings.keys_dir)
    keys.ensure()
    store = Store(settings.database_url)
    try:
        await schema.prepare_schema(store, migrate=migrate)
        await _check_keys(store, keys)
    except BaseException:
        await store.dispose()
        raise
    clock = clock or SystemClock()
    context = AppContext(settings=settings, store=store, keys=keys, clock=clock, outbox=Outbox(clock))
    context.health_checks.append(_database_check(store))
    context.workers.append(
        EventRetention(store, clock, settings.event_retention_days, consumers=(WEBHOOK_LANES_CONSUMER,))
    )
    context.auth = AuthServer(settings=settings, store=store, keys=keys, clock=clock)
    context.routes.extend(auth_routes(context.auth))
    from chargenet.edge.service import install_edge

    install_edge(context)
    install_meters(context)
    return context


async def _check_keys(store: Store, keys: KeyStore) -> None:
    fingerprint = keys.fingerprint()
    async with store.transaction() as session:
        # The first process to start records its keys; one starting at the same moment reads what it recorded.
        insert = (postgresql.insert if store.dialect == "postgresql" else sqlite.insert)(StoreSetting)
        await session.execute(
            insert.values(key=KEYS_FINGERPRINT, value=fingerprint).on_conflict_do_nothing(index_elements=["key"])
        )
        recorded = await session.scalar(select(StoreSetting.value).where(StoreSetting.key == KEYS_FINGERPRINT))
        if recorded != fingerprint:
            raise KeysMismatch(
                f"the keys in {str(keys.directory)!r} are not the ones this database was set up with "
                "(processes sharing a database must share the keys folder)"
            )


def _database_check(store: Store) -> HealthCheck:
    async def check() -> list[ComponentHealth]:
        try:
            async with store.engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        except Exception as exc:
            return [ComponentHealth("database", Level.FAILING, {"error": type(exc).__name__})]
        return [ComponentHealth("database", Level.OK, {"dialect": store.dialect})]

    return check


def create_app(context: AppContext, *, console_passwords: Passwords | None = None) -> Starlette:
    """The one ASGI app: operations endpoints, then every part's routes and mounts.

    `console_passwords` hashes operators' passwords (tests give a cheap argon2 profile; the default is argon2id's)."""
    from chargenet.api.app import create_api
    from chargenet.console.app import create_console
    from chargenet.console.pages import Console

    async def health(_: Request) -> JSONResponse:
        components: list[ComponentHealth] = []
        for check in context.health_checks:
            components.extend(await check())
        document = health_document(components)
        return JSONResponse(document, status_code=503 if document["status"] == "failing" else 200)

    async def metrics(_: Request) -> Response:
        return Response(generate_latest(context.metrics), media_type=CONTENT_TYPE_LATEST)

    routes: list[BaseRoute] = [
        Route("/health", health, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *context.routes,
        Mount("/api/v1", app=create_api(context)),
        Mount(
            "/console",
            app=create_console(
                Console(
                    context.store.transaction,
                    context.clock,
                    context.settings.public_url,
                    console_passwords or Passwords(),
                    secret_hasher=context.keys.secret_hasher(),
                )
            ),
        ),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[dict[str, Any]]:
        stopping = asyncio.Event()
        tasks = [asyncio.create_task(worker.run(stopping), name=worker.name) for worker in context.workers]
        log.info("chargenet started", extra={"fields": {"workers": len(tasks), "url": context.settings.public_url}})
        try:
            yield {}
        finally:
            # Graceful: workers finish the iteration (one transaction) they are in, then return.
            stopping.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            for hook in context.on_shutdown:
                await hook()
            log.info("chargenet stopped")

    return Starlette(routes=routes, lifespan=lifespan)
