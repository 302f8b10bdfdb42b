"""What lives for the whole process, and the one way to open it.

`AppContext` is handed to every part's install hook (`chargenet/<part>/install.py`) and reached by every API
route through one typed dependency (`chargenet.api.dependencies`). It holds the running parts only through the
narrow interfaces of `chargenet.ports`, so this module imports none of them and nothing imports in a circle.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry
from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite

from chargenet.clock import Clock, SystemClock
from chargenet.config import Settings
from chargenet.errors import KeysMismatch
from chargenet.keys import KeyStore
from chargenet.observability.health import HealthCheck
from chargenet.observability.metrics import ServiceMetrics
from chargenet.outbox import Outbox
from chargenet.ports import StationCommands, WebhookTests
from chargenet.store import schema
from chargenet.store.db import Store
from chargenet.store.models import StoreSetting

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from chargenet.auth.server import AuthServer

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
    # Registered once per context on `metrics`: `create_app` may build several apps over one context.
    service_metrics: ServiceMetrics = field(init=False)
    workers: list[Worker] = field(default_factory=list)
    health_checks: list[HealthCheck] = field(default_factory=list)
    routes: list[BaseRoute] = field(default_factory=list)
    on_shutdown: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    # Called as soon as the process is asked to stop, before the server waits for open answers to finish: the
    # long-lived ones (the console's event streams) end here, or they would hold the stop until its timeout.
    on_stopping: list[Callable[[], None]] = field(default_factory=list)
    auth: AuthServer | None = None
    # The edge when this process serves stations; `chargenet admin` reaches them through the command relay.
    edge: StationCommands | None = None
    webhook_tests: WebhookTests | None = None  # sends test events; installed with the lanes, sharing their sender

    def __post_init__(self) -> None:
        self.service_metrics = ServiceMetrics(self.metrics)
        units = self.service_metrics.store_units
        self.store.time_units(transaction=units.labels("transaction").observe, read=units.labels("read").observe)

    @property
    def stations(self) -> StationCommands:
        assert self.edge is not None, "no way to reach stations was installed"
        return self.edge

    async def close(self) -> None:
        if self.auth is not None:
            self.auth.close()
        await self.store.dispose()


async def open_store(settings: Settings, *, migrate: bool = False, clock: Clock | None = None) -> AppContext:
    """Open keys and store, and nothing else: create a new store at the latest schema, refuse an outdated
    (unless `migrate`) or newer one, and refuse a keys folder other than the one the store was set up with."""
    keys = KeyStore(settings.keys_dir)
    keys.ensure()
    clock = clock or SystemClock()
    store = Store(settings.database_url, pool_size=settings.database_pool_size, clock=clock)
    try:
        await schema.prepare_schema(store, migrate=migrate)
        await _check_keys(store, keys)
    except BaseException:
        await store.dispose()
        raise
    return AppContext(settings=settings, store=store, keys=keys, clock=clock, outbox=Outbox(clock))


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
