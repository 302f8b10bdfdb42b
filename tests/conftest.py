"""Shared fixtures: scratch stores on a real SQLite file and on a real PostgreSQL server.

Store tests take the `database_url` or `store` fixture and run once per backend; both start at the latest schema,
copied from a template this run migrates once (tests/support/templates.py), and `empty_database_url` is a database
with nothing in it, for the tests of migrating itself. The PostgreSQL server is the one
`CHARGENET_TEST_DATABASE_URL` names, or else a throwaway one this run starts in a temporary folder and stops at
its end (tests/support/postgres.py). PostgreSQL is required: when it cannot be had, the run stops with a message
saying why, instead of skipping.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from chargenet.clock import ManualClock
from chargenet.store import schema
from chargenet.store.db import Store
from tests.support.postgres import PostgresUnavailable, ThrowawayPostgres
from tests.support.templates import (
    PG_TEMPLATE_VARIABLE,
    SQLITE_TEMPLATE_VARIABLE,
    copy_sqlite_template,
    seal_sqlite_template,
    sqlite_template_unchanged,
)

pytest_plugins = [
    "tests.support.tracebacks",  # a test fails on a traceback it did not expect
    "tests.support.store_choice",  # `sqlite_only`: a test whose store plays no part runs on SQLite alone
    "pytester",
]
BACKENDS = ["sqlite", "postgresql"]
DATABASE_URL_VARIABLE = "CHARGENET_TEST_DATABASE_URL"
_throwaway: ThrowawayPostgres | None = None
_STARTED_IN = pytest.StashKey[float]()
_template_change_reported = False


def postgres_url() -> str:
    # `postgresql://...` as an operator writes it names the asyncpg driver here, as in chargenet's own settings.
    return make_url(os.environ[DATABASE_URL_VARIABLE]).set(drivername="postgresql+asyncpg").render_as_string(False)


def pytest_configure(config: pytest.Config) -> None:
    """Start the run's throwaway PostgreSQL once, in the controlling process; xdist workers inherit its URL."""
    global _throwaway
    if hasattr(config, "workerinput") or os.environ.get(DATABASE_URL_VARIABLE):
        return
    started = time.monotonic()
    server = ThrowawayPostgres()
    try:
        os.environ[DATABASE_URL_VARIABLE] = server.start()
    except PostgresUnavailable as exc:
        pytest.exit(f"PostgreSQL is required for the store tests: {exc}", returncode=3)
    _throwaway = server
    config.stash[_STARTED_IN] = time.monotonic() - started


def pytest_report_header(config: pytest.Config) -> str:
    where = make_url(postgres_url()).render_as_string(hide_password=True)
    if _throwaway is None:
        return f"postgresql: {where} (from {DATABASE_URL_VARIABLE})"
    return f"postgresql: a throwaway server at {where}, started in {config.stash[_STARTED_IN]:.1f} s"


def pytest_unconfigure(config: pytest.Config) -> None:
    global _throwaway
    if not hasattr(config, "workerinput"):
        _remove_templates()
    if _throwaway is not None:
        _throwaway.stop()
        _throwaway = None
        os.environ.pop(DATABASE_URL_VARIABLE, None)


def _plain_dsn(url: str, database: str | None = None) -> str:
    parsed = make_url(url)
    if database is not None:
        parsed = parsed.set(database=database)
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


def pytest_sessionstart(session: pytest.Session) -> None:
    async def probe() -> None:
        connection = await asyncpg.connect(_plain_dsn(postgres_url()), timeout=5)
        await connection.close()

    try:
        asyncio.run(probe())
    except Exception as exc:
        where = make_url(postgres_url()).render_as_string(hide_password=True)
        pytest.exit(
            f"PostgreSQL is required for the store tests and did not answer at {where} ({exc}). "
            f"Unset {DATABASE_URL_VARIABLE} to have the run start a throwaway server, or point it at a server "
            "whose role may CREATE DATABASE.",
            returncode=3,
        )
    if not hasattr(session.config, "workerinput") and SQLITE_TEMPLATE_VARIABLE not in os.environ:
        # Before xdist starts its workers (its own session start runs last), so that they inherit the names in
        # their environment.
        asyncio.run(_make_templates())


async def _make_templates() -> None:
    folder = Path(tempfile.mkdtemp(prefix="chargenet-template-"))
    sqlite_path = folder / "chargenet.db"
    await _migrate(f"sqlite+aiosqlite:///{sqlite_path}")
    seal_sqlite_template(sqlite_path)
    pg_template = await create_pg_database(from_template=False)
    await _migrate(pg_template)
    os.environ[PG_TEMPLATE_VARIABLE] = make_url(pg_template).database or ""


async def _migrate(url: str) -> None:
    template = Store(url)
    try:
        await schema.prepare_schema(template)
    finally:
        # No connection may stay: PostgreSQL copies a template only while nobody is connected to it, and SQLite's
        # last close folds the WAL into the file that is copied.
        await template.dispose()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The tests marked slow (processes, servers, fuzzing) go first, each in its order: xdist hands the first quarter
    # of the run round-robin to its workers, so the longest tests run side by side at the start instead of one of
    # them starting near the end and keeping the run going after the others have finished.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    # The copies a process makes come from the bytes it read once, so a test writing to the shared template spoils
    # no other test; it fails itself, named, so that it is found.
    global _template_change_reported
    if not _template_change_reported and not sqlite_template_unchanged():
        _template_change_reported = True  # said once, by the test that did it
        where = os.environ[SQLITE_TEMPLATE_VARIABLE]
        pytest.fail(f"{item.nodeid} changed the run's SQLite template {where}, which every test copies")


def _remove_templates() -> None:
    sqlite_path = os.environ.pop(SQLITE_TEMPLATE_VARIABLE, None)
    if sqlite_path is not None:
        shutil.rmtree(Path(sqlite_path).parent, ignore_errors=True)
    pg_template = os.environ.pop(PG_TEMPLATE_VARIABLE, None)
    if pg_template and _throwaway is None:  # a throwaway server goes with everything on it
        asyncio.run(drop_pg_database(make_url(postgres_url()).set(database=pg_template).render_as_string(False)))


async def create_pg_database(*, from_template: bool = True) -> str:
    """A new database on the run's server: at the latest schema, or empty unless `from_template`."""
    name = f"chargenet_t_{secrets.token_hex(6)}"
    template = os.environ[PG_TEMPLATE_VARIABLE] if from_template else "template1"
    admin = await asyncpg.connect(_plain_dsn(postgres_url()))
    try:
        for attempt in range(20):
            try:
                await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
                break
            except asyncpg.ObjectInUseError:
                # Another CREATE DATABASE is copying template1 at this moment (parallel test runs), or a connection
                # to the run's template has not yet gone.
                if attempt == 19:
                    raise
                await asyncio.sleep(0.1 * (attempt + 1))
    finally:
        await admin.close()
    return make_url(postgres_url()).set(database=name).render_as_string(hide_password=False)


async def drop_pg_database(url: str) -> None:
    name = make_url(url).database
    admin = await asyncpg.connect(_plain_dsn(postgres_url()))
    try:
        for attempt in range(20):
            try:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                return
            except (asyncpg.InsufficientPrivilegeError, asyncpg.ObjectInUseError):
                # An autovacuum worker (owned by the superuser) is in the scratch database; it leaves on its own.
                await asyncio.sleep(0.1 * (attempt + 1))
        # A scratch database left behind is harmless and must not fail the test that used it.
    finally:
        await admin.close()


@pytest.fixture(params=BACKENDS)
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A database at the latest schema with nothing stored, on each backend: a SQLite file, or a PostgreSQL
    database."""
    if request.param == "sqlite":
        path = tmp_path / "chargenet.db"
        copy_sqlite_template(path)
        yield f"sqlite+aiosqlite:///{path}"
        return
    url = await create_pg_database()
    try:
        yield url
    finally:
        await drop_pg_database(url)


@pytest.fixture(params=BACKENDS)
async def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A database without even a schema, on each backend: for the tests of creating and migrating one."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'chargenet.db'}"
        return
    url = await create_pg_database(from_template=False)
    try:
        yield url
    finally:
        await drop_pg_database(url)


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A PostgreSQL database at the latest schema, for tests whose processes share one: PostgreSQL only, as SQLite
    has one writer."""
    url = await create_pg_database()
    try:
        yield url
    finally:
        await drop_pg_database(url)


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Store]:
    """A store at the latest schema, on each backend."""
    instance = Store(database_url)
    await schema.prepare_schema(instance)  # the copy of the template is at the latest schema already: a check
    try:
        yield instance
    finally:
        await instance.dispose()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 7, 1, 12, 0, tzinfo=UTC))


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "data"
    path.mkdir()
    yield path
