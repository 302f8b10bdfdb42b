"""What lives for the whole process, and the one way to open it.

`AppContext` is handed to every part's install hook (`chargenet/<part>/install.py`) and reached by every API
route through one typed dependency (`chargenet.api.dependencies`). It holds the running parts only through the
narrow interfaces of `chargenet.ports`, so this module imports none of them and nothing imports in a circle.

`chargenet admin` opens one for each command (`open_store`), so what only some processes use is made, and its
modules imported, on first use: the outbox (its events' models) and the metrics (prometheus_client). Listing
companies imports neither.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Protocol

from sqlalchemy import Insert, select

from chargenet.clock import Clock, SystemClock
from chargenet.errors import KeysMismatch
from chargenet.keys import KeyStore
from chargenet.store import schema
from chargenet.store.db import Store
from chargenet.store.models.meta import StoreSetting

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from starlette.routing import BaseRoute

    from chargenet.auth.server import AuthServer
    from chargenet.config import Settings
    from chargenet.observability.health import HealthCheck
    from chargenet.observability.metrics import ServiceMetrics
    from chargenet.outbox import Outbox
    from chargenet.ports import StationCommands, WebhookTests

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

    @cached_property
    def outbox(self) -> Outbox:
        """The one way this process raises events (`Outbox.publish` in the caller's transaction)."""
        from chargenet.outbox import Outbox

        return Outbox(self.clock)

    @cached_property
    def service_metrics(self) -> ServiceMetrics:
        """What `/metrics` shows of every process, registered once per context on `metrics` (`create_app` may build
        several apps over one context); the store's units are timed from then on. The parts' install hooks reach
        it, so a serving process has it before it serves."""
        from prometheus_client import CollectorRegistry

        from chargenet.observability.metrics import ServiceMetrics

        metrics = ServiceMetrics(CollectorRegistry())
        units = metrics.store_units
        self.store.time_units(transaction=units.labels("transaction").observe, read=units.labels("read").observe)
        return metrics

    @property
    def metrics(self) -> CollectorRegistry:
        """The registry `/metrics` serves, which the parts add their instruments to."""
        return self.service_metrics.registry

    @property
    def stations(self) -> StationCommands:
        assert self.edge is not None, "no way to reach stations was installed"
        return self.edge

    async def close(self) -> None:
        if self.auth is not None:
            await self.auth.close()
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
    return AppContext(settings=settings, store=store, keys=keys, clock=clock)


_RECORDED_KEYS = select(StoreSetting.value).where(StoreSetting.key == KEYS_FINGERPRINT)


async def _check_keys(store: Store, keys: KeyStore) -> None:
    fingerprint = keys.fingerprint()
    # Every process and every admin command checks: one read, which waits for no writer. Only a new store writes.
    recorded = await store.read_value(_RECORDED_KEYS)
    if recorded is None:
        recorded = await _record_keys(store, fingerprint)
    if recorded != fingerprint:
        raise KeysMismatch(
            f"the keys in {str(keys.directory)!r} are not the ones this database was set up with "
            "(processes sharing a database must share the keys folder)"
        )


async def _record_keys(store: Store, fingerprint: str) -> str | None:
    """Record the keys' fingerprint in a new store and answer the one recorded: the first process to start
    records its keys; one starting at the same moment reads what it recorded."""
    async with store.transaction() as session:
        await session.execute(_insert_if_absent(store.dialect, fingerprint))
        return await session.scalar(_RECORDED_KEYS)


def _insert_if_absent(dialect: str, fingerprint: str) -> Insert:
    row = {"key": KEYS_FINGERPRINT, "value": fingerprint}
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        return postgresql_insert(StoreSetting).values(row).on_conflict_do_nothing(index_elements=["key"])
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(StoreSetting).values(row).on_conflict_do_nothing(index_elements=["key"])
