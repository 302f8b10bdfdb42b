"""Engine and transactions.

SQLite runs in WAL mode with `synchronous=FULL` (a committed event survives a power cut, not only a crash)
and every transaction starts with `BEGIN IMMEDIATE`, so a read transaction that later writes never fails with
"database is locked". Within one process, transactions queue on an asyncio lock; other processes wait on the
busy timeout. pysqlite's own implicit
transaction handling is switched off so that DDL is transactional too (a migration applies whole or not).

`read()` is a unit of work that only reads. On SQLite it runs on connections of its own (deferred `BEGIN`,
`query_only`), so it reads a consistent WAL snapshot without queueing behind writers or holding them up; on
PostgreSQL, where readers never wait for writers anyway, it is an ordinary transaction.

`Store.listener` is the process's one LISTEN connection (`store.notify`), how it learns at once what other
processes sharing a PostgreSQL store commit; `notify(session, ...)` is how a unit of work tells them.

Each unit's duration, from asking for it to its end (a wait for this process's SQLite writer lock included), goes
to the observers given to `time_units` (the `/metrics` histogram of a serving process).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection, Engine, PoolProxiedConnection, Select, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from chargenet.clock import Clock, SystemClock
from chargenet.store.notify import Listener, connect_arguments
from chargenet.store.sqlite_driver import LoopConnection, loop_connector

SQLITE_BUSY_TIMEOUT_MS = 10_000
# The execution option of a statement that may run long (a purge of old rows): on SQLite it runs off the event loop
# (store/sqlite_driver.py). `statement.execution_options(**LONG)`.
MAY_RUN_LONG = "may_run_long"
LONG = {MAY_RUN_LONG: True}
# PostgreSQL connections a process keeps (no more are opened): as many as it could open before (10 and an overflow
# of 10), so a server's `max_connections` serves as many processes as it did. SQLite's engines take neither setting.
POOL_SIZE = 20
POOL_TIMEOUT = 30.0  # seconds a unit waits for a pooled connection before it fails

T = TypeVar("T")

Observe = Callable[[float], None]  # a duration in seconds

# Units of work as a use case that opens its own is given them: `Store.transaction`, or `Store.read` for one that
# only reads (docs/architecture.md, "Who owns the unit of work").
Transactions = Callable[[], AbstractAsyncContextManager[AsyncSession]]


class ReadStatement(Protocol):
    """`Store.read_statement`, as a read on the hot path is given it: `work`, a function of one statement, runs
    as a unit of its own."""

    async def __call__(self, work: Callable[[Connection], T], /) -> T: ...


def _unobserved(_seconds: float) -> None:
    pass


class Store:
    def __init__(
        self,
        url: str,
        *,
        pool_size: int | None = None,
        pool_timeout: float = POOL_TIMEOUT,
        clock: Clock | None = None,
        ping_after_idle: float | None = None,
    ) -> None:
        self.url = url
        parsed = make_url(url)
        self.dialect = parsed.get_backend_name()
        if self.dialect == "sqlite":
            database = parsed.database
            if database and database != ":memory:":
                Path(database).parent.mkdir(parents=True, exist_ok=True)
            # The writer's statements run on the event loop, its BEGIN and COMMIT on aiosqlite's thread
            # (store/sqlite_driver.py): a unit of work pays two thread hops, not one per statement.
            self.engine: AsyncEngine = create_async_engine(url, async_creator=_loop_connector(url))
            _configure_sqlite(self.engine)
        else:
            # A fixed pool: past `pool_size` units wait for a connection rather than open one. Connections opened for
            # a burst and closed after it (SQLAlchemy's overflow) made a reconnect storm of 10,000 stations slower the
            # busier it got: each new connection cost the server a backend and the process its prepared statements
            # again, so units took longer, more overlapped, and more connections were opened. A station's p50 went
            # from 418-536 ms to 46-52 ms, its p99 from 1.4-1.6 s to 0.43-0.45 s (docs/performance.md).
            self.engine = create_async_engine(
                url, pool_size=pool_size or POOL_SIZE, max_overflow=0, pool_timeout=pool_timeout
            )
            _ping_when_idle(
                self.engine, clock or SystemClock(), PING_AFTER_IDLE if ping_after_idle is None else ping_after_idle
            )
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self._read_engine: AsyncEngine | None = None
        self._reads = self._sessions
        if self.dialect == "sqlite" and parsed.database and parsed.database != ":memory:":
            self._read_engine = create_async_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
            _configure_sqlite_reader(self._read_engine.sync_engine)
            _interrupt_on_invalidate(self._read_engine)
            self._reads = async_sessionmaker(self._read_engine, expire_on_commit=False)
            # `read_at_once` on SQLite: pysqlite called directly on the event loop's thread.
            self._direct_reads: Engine | None = create_engine(
                parsed.set(drivername="sqlite+pysqlite"),
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            )
            _configure_sqlite_reader(self._direct_reads)
        else:
            self._direct_reads = None
        self._value_reader: PoolProxiedConnection | None = None  # `read_value`'s connection, opened on first use
        self._compiled_values: dict[int, tuple[Select[Any], str, tuple[Any, ...]]] = {}
        # Every SQLite transaction is a writer (BEGIN IMMEDIATE), so only one runs at a time anyway. Queueing
        # this process's transactions on an asyncio lock, in order, replaces waiting in SQLite's busy handler,
        # which polls with sleeps of up to 100 ms: under load that alone took webhook latency from tens of
        # milliseconds to over a second. Other processes still meet the busy handler.
        self._sqlite_writer = asyncio.Lock() if self.dialect == "sqlite" else None
        self._observe_transaction: Observe = _unobserved
        self._observe_read: Observe = _unobserved
        # What other processes sharing the store committed, as they notify it (`store.notify`); a worker of the
        # process runs it, and nothing connects until something subscribes.
        self.listener = Listener(
            connect_arguments(self.engine) if self.dialect == "postgresql" else None, clock or SystemClock()
        )

    def time_units(self, *, transaction: Observe, read: Observe) -> None:
        """Report the duration of every `transaction()` and every `read()` from now on."""
        self._observe_transaction = transaction
        self._observe_read = read

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """One unit of work: committed when the block ends normally, rolled back when it raises.

        On SQLite, do not open a transaction inside another one in the same task: the second waits for the first.
        """
        started = time.perf_counter()
        try:
            if self._sqlite_writer is None:
                async with self._sessions.begin() as session:
                    yield session
                return
            async with self._sqlite_writer, self._sessions.begin() as session:
                yield session
        finally:
            self._observe_transaction(time.perf_counter() - started)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A unit of work that only reads: it sees what was committed when it began, and never waits for a
        writer. A write inside it fails (SQLite refuses it: `query_only`)."""
        started = time.perf_counter()
        try:
            async with self._reads.begin() as session:
                yield session
        finally:
            self._observe_read(time.perf_counter() - started)

    async def read_at_once(self, work: Callable[[Connection], T]) -> T:
        """Run `work`, a function of Core statements that only reads, as one unit seeing one snapshot.

        On a SQLite file it runs on this thread, through pysqlite directly: a read of indexed rows in WAL mode
        takes tens of microseconds a statement and never waits for a writer, which is less than what handing each
        statement to aiosqlite's thread and back costs (a thread hop, a greenlet switch and a loop wake-up each).
        Keep `work` short (a page, not a scan): the event loop waits for it. On PostgreSQL it runs on a pooled
        connection in a read-only REPEATABLE READ transaction (under READ COMMITTED each statement would see its
        own snapshot), each statement awaited as usual.
        """
        started = time.perf_counter()
        try:
            if self._direct_reads is not None:
                with self._direct_reads.connect() as connection, connection.begin():
                    return work(connection)
            async with (self._read_engine or self.engine).connect() as pooled:
                if self.dialect == "postgresql":
                    await pooled.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
                async with pooled.begin():
                    return await pooled.run_sync(work)
        finally:
            self._observe_read(time.perf_counter() - started)

    async def read_in_parts(self, work: Callable[[Connection], Generator[None, None, T]]) -> T:
        """A read of many rows (a whole table) seeing one snapshot, that lets the event loop run between its parts:
        `work` is a generator that yields after each part and returns the result. On a SQLite file it runs whole in
        a thread of its own (the thread and the loop share the interpreter's lock, which the loop gets back every
        few milliseconds); on PostgreSQL each part runs on the loop, in one read-only REPEATABLE READ transaction,
        the loop going on between parts."""
        started = time.perf_counter()
        try:
            if self._direct_reads is not None:
                return await asyncio.to_thread(self._read_directly, lambda connection: _drained(work(connection)))
            async with (self._read_engine or self.engine).connect() as pooled:
                if self.dialect == "postgresql":
                    await pooled.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
                async with pooled.begin():
                    parts = await pooled.run_sync(work)  # a generator: nothing has run yet
                    while True:
                        done, value = await pooled.run_sync(lambda _: _next_part(parts))
                        if done:
                            return value  # type: ignore[return-value]
                        await asyncio.sleep(0)
        finally:
            self._observe_read(time.perf_counter() - started)

    def _read_directly(self, work: Callable[[Connection], T]) -> T:
        assert self._direct_reads is not None
        with self._direct_reads.connect() as connection, connection.begin():
            return work(connection)

    async def read_statement(self, work: Callable[[Connection], T]) -> T:
        """`read_at_once` for a `work` that runs exactly one statement (a station's credentials, a connector's
        status): a statement sees one snapshot by itself, so on PostgreSQL it runs outside a transaction, which
        saves the BEGIN and COMMIT round trips (370 to 210 us a read here). Two statements would each see their
        own snapshot there: use `read_at_once` for those. On SQLite it is `read_at_once`, so a `work` that runs
        one statement on PostgreSQL may run a second on SQLite (the charge points page's meters)."""
        if self.dialect != "postgresql":
            return await self.read_at_once(work)
        started = time.perf_counter()
        try:
            return await self._autocommit(work)
        finally:
            self._observe_read(time.perf_counter() - started)

    async def write_statement(self, work: Callable[[Connection], T]) -> T:
        """Run `work`, a function that runs exactly one statement that writes, committed by itself: on PostgreSQL
        outside a transaction, which saves the BEGIN and COMMIT round trips (a claim of an application's rate limit
        slice, conditional on the row it read before); elsewhere in a `transaction()` of its own."""
        if self.dialect != "postgresql":
            async with self.transaction() as session:
                return await session.run_sync(lambda sync_session: work(sync_session.connection()))
        started = time.perf_counter()
        try:
            return await self._autocommit(work)
        finally:
            self._observe_transaction(time.perf_counter() - started)

    async def _autocommit(self, work: Callable[[Connection], T]) -> T:
        """`work` on a pooled PostgreSQL connection outside any transaction: each statement commits by itself."""
        async with self.engine.connect() as pooled:
            await pooled.execution_options(isolation_level="AUTOCOMMIT")
            return await pooled.run_sync(work)

    async def read_value(self, statement: Select[T]) -> T | None:
        """The first column of the first row of `statement`, a read of one row by its key (a version, a counter),
        at the least cost the store allows: on a SQLite file one call into pysqlite on a connection kept for such
        reads, where `read_at_once`'s connection, transaction and result objects cost twice the read itself; on
        PostgreSQL `read_statement`. `statement` should be a constant: its SQL is compiled once."""
        if self._direct_reads is None:
            return await self.read_statement(lambda connection: connection.execute(statement).scalar())
        started = time.perf_counter()
        try:
            compiled = self._compiled_values.get(id(statement))
            if compiled is None or compiled[0] is not statement:
                made = statement.compile(dialect=self._direct_reads.dialect)
                positions = made.positiontup or []
                compiled = (statement, str(made), tuple(made.params[name] for name in positions))
                self._compiled_values[id(statement)] = compiled
            if self._value_reader is None:
                self._value_reader = self._direct_reads.raw_connection()
            try:
                row = self._value_reader.cursor().execute(compiled[1], compiled[2]).fetchone()
            except Exception:
                # The next read opens a connection anew rather than trying this one again.
                self._value_reader.invalidate()
                self._value_reader = None
                raise
            return None if row is None else row[0]
        finally:
            self._observe_read(time.perf_counter() - started)

    async def take_statistics(self, analysis_limit: int = 1000) -> None:
        """SQLite: sample every index for the query planner (`ANALYZE`, `analysis_limit` rows each, so it takes
        milliseconds however large the store), then close the pooled connections, since a connection reads the
        statistics when it opens. Call it while no unit of work runs (a process starting). An in-memory store and
        PostgreSQL (its autovacuum analyzes) are left be."""
        if self.dialect != "sqlite" or self._read_engine is None:
            return
        async with self.transaction() as session:
            await session.execute(text(f"PRAGMA analysis_limit={int(analysis_limit)}"))
            await session.execute(text("ANALYZE"))
        await self.dispose()

    async def dispose(self) -> None:
        if self._value_reader is not None:
            self._value_reader.close()
            self._value_reader = None
        if self._read_engine is not None:
            await self._read_engine.dispose()
        if self._direct_reads is not None:
            self._direct_reads.dispose()
        await self.engine.dispose()


def _drained(parts: Generator[None, None, T]) -> T:
    while True:
        try:
            next(parts)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


def _next_part(parts: Generator[None, None, T]) -> tuple[bool, T | None]:
    """(True, the result) once `parts` returned, else (False, None): a StopIteration must not cross a coroutine."""
    try:
        next(parts)
    except StopIteration as done:
        return True, done.value
    return False, None


def _loop_connector(url: str) -> Callable[[], Awaitable[LoopConnection]]:
    dialect = make_url(url).get_dialect()()
    arguments, options = dialect.create_connect_args(make_url(url))
    options.pop("check_same_thread", None)
    timeout = options.pop("timeout", None)  # `?timeout=` in the URL, in seconds, as pysqlite takes it
    busy_timeout_ms = SQLITE_BUSY_TIMEOUT_MS if timeout is None else int(float(timeout) * 1000)
    return loop_connector(*arguments, busy_timeout_ms=busy_timeout_ms, **options)


def _lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


def _unicode_lower(dbapi_connection: Any) -> None:
    """SQLite's own lower() (and so ILIKE) folds ASCII only, so a search for "über" would miss "Über"; PostgreSQL's
    folds every letter. The same Python fold on SQLite makes a search find the same rows on both."""
    dbapi_connection.create_function("lower", 1, _lower, deterministic=True)


def _configure_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()
        _unicode_lower(dbapi_connection)

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def _long_off_the_loop(
        connection: Any, _cursor: Any, _statement: str, _parameters: Any, context: Any, _executemany: bool
    ) -> None:
        if context is not None and context.execution_options.get(MAY_RUN_LONG):
            driver = connection.connection.driver_connection
            if isinstance(driver, LoopConnection):
                driver.run_next_statement_in_thread()

    _interrupt_on_invalidate(engine)


def _configure_sqlite_reader(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA query_only=ON")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()
        _unicode_lower(dbapi_connection)

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # Deferred: the snapshot is taken at the first read, and no write lock is ever asked for.
        connection.exec_driver_sql("BEGIN")


PING_AFTER_IDLE = 10.0
"""Seconds a pooled PostgreSQL connection may have rested before it is checked with a ping on checkout."""


def _ping_when_idle(engine: AsyncEngine, clock: Clock, idle: float) -> None:
    """Ping a pooled connection on checkout only if it rested `idle` seconds or more.

    SQLAlchemy's `pool_pre_ping` pings on every checkout: a round trip before every unit of work, a tenth of the
    edge's time under a reconnect storm on PostgreSQL. A connection in steady use needs none: one that broke since
    its last use fails that unit with a disconnect, and SQLAlchemy then discards every connection of the pool, so
    what a restarted server costs is that one unit. A connection that rested is likely the one a restart or an idle
    timeout closed, and is checked first, as `pool_pre_ping` would (the pool then connects afresh)."""

    @event.listens_for(engine.sync_engine, "checkin")
    def _rested_from(_dbapi_connection: Any, record: Any) -> None:
        record.info["checked_in_at"] = clock.now()

    @event.listens_for(engine.sync_engine, "checkout")
    def _ping_if_rested(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        rested_from = record.info.get("checked_in_at")
        # A rest that comes out negative is the wall clock set back meanwhile: how long it rested is unknown, so
        # it is pinged, as one that rested long is.
        if rested_from is None or 0 <= (clock.now() - rested_from).total_seconds() < idle:
            return
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise DisconnectionError("the pooled connection did not answer a ping") from exc
        if not alive:
            raise DisconnectionError("the pooled connection did not answer a ping")


def _interrupt_on_invalidate(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine.pool, "invalidate")
    def _on_invalidate(dbapi_connection: Any, _record: Any, _exception: BaseException | None) -> None:
        # A transaction cancelled in the middle of a statement (its caller went away) gets its connection
        # invalidated and closed by SQLAlchemy; but sqlite3 keeps a connection whose statement was never reset
        # open, write lock included, until the garbage collector finds it: every writer of the process then waits
        # out the busy timeout. The statement is interrupted and the transaction rolled back first, on the
        # connection's own thread, ahead of the close.
        driver = getattr(dbapi_connection, "driver_connection", None)
        if isinstance(driver, LoopConnection):
            driver.interrupt_and_roll_back()  # counted, so that nothing runs on the loop beside it
            return
        connection = getattr(driver, "_connection", None)
        queue = getattr(driver, "_tx", None)
        if isinstance(connection, sqlite3.Connection) and queue is not None:
            connection.interrupt()
            queue.put_nowait((None, connection.rollback))
