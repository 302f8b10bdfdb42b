"""Wake-ups across the processes sharing one PostgreSQL store: NOTIFY in the writer's transaction, LISTEN on one
connection per process.

Sending. `notify(session, channel, payload)` has PostgreSQL notify `channel` when the caller's transaction
commits, never when it rolls back. The `SELECT pg_notify(...)` is left to the transaction's commit
(`store.commit_hooks.before_commit`) and run just before it, inside the transaction the caller already runs: one
extra statement, no transaction of its own, and one per (channel, payload) however often the transaction asks,
so the edge's group committer, whose units each may publish, sends one notification per commit rather than one
per unit. Left to the commit rather than sent at once because the group committer runs each unit in a
savepoint: a notification sent inside one that is rolled back is discarded with it, and one sent once per
transaction would then be missing. A wish made inside a savepoint that is rolled back goes with it. On SQLite it
does nothing: there is no LISTEN, and processes learn of each other's commits by polling.

Receiving. `Listener` (one per `Store`, a worker the process's lifecycle runs) holds one asyncpg connection of
its own, outside the pool, opened only once something subscribes. It LISTENs on every channel asked for (and
keeps listening: the channels are a few fixed names, below) and sets the asyncio Events of the subscribers of a
channel, or only of those waiting for a given payload. Whenever a channel's LISTEN takes effect (the first
connection, a reconnection, a channel asked for later) its subscribers are woken once, since notifications sent
before it were missed. A connection that drops (or fails the liveness check every `CHECK_EVERY` seconds) is
opened again at once, then after backoffs growing to RECONNECT_MAX. While it is down, `listening` is False and
the subscribers poll at their fast interval; the polls are the safety net either way.

Payloads stay small (PostgreSQL's limit is 8,000 bytes): an id, or nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.orm import Session

from chargenet.clock import Clock
from chargenet.store.commit_hooks import before_commit
from chargenet.waiting import first_of

if TYPE_CHECKING:
    import asyncpg

log = logging.getLogger(__name__)

# The channels, one per kind of news. Each names what a waiting process does on it.
OUTBOX = "chargenet_outbox"  # events were published: webhook fillers read the outbox
STATION_COMMANDS = "chargenet_station_commands"  # a command waits for the station named by the payload
COMMAND_ANSWERS = "chargenet_command_answers"  # the command whose id is the payload was answered or failed
CONNECTOR_STATUS = "chargenet_connector_status"  # connector statuses were written: the console's live feeds read
WEBHOOK_LANES = "chargenet_webhook_lanes"  # a filler put entries in lanes: their holders wake the idle ones
SITE_POWER = "chargenet_site_power"  # what the site named by the payload may draw changed: its round runs at once

APPLICATION_NAME = "chargenet-listener"  # how the connection shows in pg_stat_activity
CHECK_EVERY = 30.0  # seconds between liveness checks of an idle listening connection (a peer gone without a word)
CHECK_TIMEOUT = 5.0
CONNECT_TIMEOUT = 10.0
RECONNECT_FIRST = 0.1
RECONNECT_MAX = 5.0

_NOTIFY = text("SELECT pg_notify(:channel, :payload)")
_DRIVER_ONLY = ("prepared_statement_cache_size", "prepared_statement_name_func", "async_creator_fn")


def notify(session: AsyncSession, channel: str, payload: str = "") -> None:
    """Notify `channel` with `payload` when the transaction of `session` commits (on PostgreSQL; nothing on
    SQLite). The statement runs inside that transaction, just before its commit."""
    if session.sync_session.get_bind().dialect.name != "postgresql":
        return
    before_commit(session, functools.partial(_send, channel, payload), key=(_send, channel, payload))


def _send(channel: str, payload: str, session: Session) -> None:
    session.execute(_NOTIFY, {"channel": channel, "payload": payload})


def reconnect_delay(failures: int) -> float:
    """Seconds to wait before connecting again after `failures` failed attempts in a row: none after a drop
    (the first attempt), then doubling from RECONNECT_FIRST up to RECONNECT_MAX."""
    if failures <= 0:
        return 0.0
    return float(min(RECONNECT_FIRST * 2 ** (failures - 1), RECONNECT_MAX))


def connect_arguments(engine: AsyncEngine) -> dict[str, Any]:
    """asyncpg's `connect` arguments for the connections of `engine` (a `postgresql+asyncpg` one), as its pool
    computes them (host, credentials, TLS and the rest), without the ones only SQLAlchemy's adapter reads."""
    args, params = engine.dialect.create_connect_args(engine.url)
    assert not args, "the asyncpg dialect passes everything by name"
    return {key: value for key, value in params.items() if key not in _DRIVER_ONLY}


class Listener:
    """The process's LISTEN connection and its subscribers (see the module docstring). `arguments` are asyncpg's
    connect arguments; None (SQLite) makes a listener that never connects and never wakes anyone."""

    name = "store-listener"

    def __init__(self, arguments: dict[str, Any] | None, clock: Clock) -> None:
        if arguments is not None:
            settings = {"application_name": APPLICATION_NAME, **(arguments.get("server_settings") or {})}
            arguments = {**arguments, "server_settings": settings}
        self._arguments = arguments
        self.clock = clock
        self._subscribers: dict[str, dict[asyncio.Event, str | None]] = {}
        self._active: set[str] = set()  # channels LISTENed on the live connection
        self._asked = asyncio.Event()  # a channel not yet LISTENed was subscribed to
        self.connections = 0  # connections opened so far (the first included)

    @property
    def enabled(self) -> bool:
        """True on PostgreSQL: notifications can reach this process."""
        return self._arguments is not None

    def listening(self, channel: str) -> bool:
        """True while `channel`'s notifications reach this process: a subscriber polls slowly only then."""
        return channel in self._active

    def subscribe(self, channel: str, payload: str | None = None) -> asyncio.Event:
        """An Event set by every notification on `channel` (with `payload` only, unless None), and once whenever
        the channel's LISTEN takes effect. Its owner clears it before it reads what it was woken for."""
        woken = asyncio.Event()
        self._subscribers.setdefault(channel, {})[woken] = payload
        if channel not in self._active:
            self._asked.set()
        return woken

    def unsubscribe(self, channel: str, woken: asyncio.Event) -> None:
        subscribers = self._subscribers.get(channel)
        if subscribers is not None:
            subscribers.pop(woken, None)

    @contextlib.contextmanager
    def subscription(self, channel: str, payload: str | None = None) -> Iterator[asyncio.Event]:
        woken = self.subscribe(channel, payload)
        try:
            yield woken
        finally:
            self.unsubscribe(channel, woken)

    # --- the worker ---------------------------------------------------------------------------------------------

    async def run(self, stopping: asyncio.Event) -> None:
        if self._arguments is None:
            await stopping.wait()
            return
        import asyncpg  # a process on SQLite (and every `chargenet admin` command) never loads it

        failures = 0
        while not stopping.is_set():
            if not self._subscribers:
                await first_of(self._asked.wait(), stopping.wait())  # opened lazily: once somebody subscribes
                continue
            if failures:
                await first_of(self.clock.sleep(reconnect_delay(failures)), stopping.wait())
                if stopping.is_set():
                    return
            try:
                connection = await asyncpg.connect(**self._arguments, timeout=CONNECT_TIMEOUT)
            except Exception as exc:  # whatever it is, the next attempt may do better: the worker lives on
                failures += 1
                log.warning(
                    "the store's listening connection could not be opened",
                    extra={"fields": {"error": type(exc).__name__, "failures": failures}},
                )
                continue
            self.connections += 1
            try:
                await self._listen(connection, stopping)
            except Exception as exc:
                log.warning(
                    "the store's listening connection was lost", extra={"fields": {"error": type(exc).__name__}}
                )
            finally:
                # Once it listened, a drop is news and the next attempt is at once; a connection that never
                # came to listen is a failure like one that never opened, so that a refusal is not a spin.
                failures = 0 if self._active else failures + 1
                self._active.clear()
                if not connection.is_closed():
                    connection.terminate()

    async def _listen(self, connection: asyncpg.Connection, stopping: asyncio.Event) -> None:
        lost = asyncio.Event()
        connection.add_termination_listener(lambda _: lost.set())
        while not stopping.is_set() and not lost.is_set():
            self._asked.clear()
            for channel in sorted(set(self._subscribers) - self._active):
                await connection.add_listener(channel, self._deliver)
                self._active.add(channel)
                self._wake_all(channel)  # what was sent before the LISTEN took effect was missed
            await first_of(stopping.wait(), lost.wait(), self._asked.wait(), self.clock.sleep(CHECK_EVERY))
            if not (stopping.is_set() or lost.is_set() or self._asked.is_set()):
                await asyncio.wait_for(connection.fetchval("SELECT 1"), CHECK_TIMEOUT)
        if not lost.is_set():
            with contextlib.suppress(Exception):
                await connection.close(timeout=CHECK_TIMEOUT)

    def _deliver(self, _connection: object, _pid: int, channel: str, payload: str) -> None:
        for woken, wanted in list(self._subscribers.get(channel, {}).items()):
            if wanted is None or wanted == payload:
                woken.set()

    def _wake_all(self, channel: str) -> None:
        for woken in list(self._subscribers.get(channel, {})):
            woken.set()
