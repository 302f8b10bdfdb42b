"""Schema versions: create a new store, refuse an outdated or too-new one, migrate on request.

Decisions.md §4: `serve` and `admin` create a new store at the latest schema on first use; a store at an
older schema is upgraded only by `chargenet migrate` (or `serve --migrate`); a newer schema is refused.
All migrations of one upgrade run in a single transaction, so a failure leaves the store as it was.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DatabaseError, DBAPIError, InterfaceError, OperationalError

from chargenet.errors import SchemaOutdated, SchemaTooNew, StoreCorrupt, StoreUnreachable
from chargenet.store.db import Store

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic is imported only where a schema changes or its history is walked: every command of `chargenet admin`
# opens the store, and for a store already at the code's schema the version row and the file names suffice.
MIGRATIONS = Path(__file__).parent / "migrations"


class SchemaAction(enum.Enum):
    CREATED = "created"
    CURRENT = "current"
    UPGRADED = "upgraded"


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision, read from the file names: each revision's id is its file's number (`0009_...py`),
    and the numbers follow the history (tests/integration/store/test_schema.py checks both against Alembic)."""
    return max(path.name.partition("_")[0] for path in (MIGRATIONS / "versions").glob("[0-9]*_*.py"))


def alembic_head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory

    return {script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()}


async def current_revision(store: Store) -> str | None:
    """The store's schema version (None: an empty store). A read, which takes no write lock: every process and every
    admin command asks it first, while a serving process may be writing."""
    try:
        return await store.read_at_once(_read_revision)
    except (OperationalError, InterfaceError, OSError) as exc:
        raise _unreachable(store, exc) from None
    except DatabaseError as exc:
        raise StoreCorrupt(f"the database is not readable: {_reason(exc)}") from None
    except DBAPIError as exc:
        # asyncpg reports a refused login or a missing database as a plain DBAPIError.
        raise _unreachable(store, exc) from None


SQLITE_SCHEMA_ATTEMPTS = 3
"""How many times a process starting on a SQLite file waits out the busy timeout for another one's migration."""


async def prepare_schema(store: Store, *, migrate: bool = False) -> SchemaAction:
    """Bring the store to the code's schema, or raise a `StoreError` that says what to do."""
    for attempt in range(1, SQLITE_SCHEMA_ATTEMPTS + 1):
        try:
            return await _prepare_schema(store, migrate=migrate)
        except StoreUnreachable as exc:
            # Processes starting together on a new SQLite file queue on its write lock while one of them creates
            # the schema, which on a busy machine can outlast one busy timeout; they wait for it a few times over.
            if store.dialect != "sqlite" or "database is locked" not in str(exc) or attempt == SQLITE_SCHEMA_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


async def _prepare_schema(store: Store, *, migrate: bool) -> SchemaAction:
    head = head_revision()
    current = await current_revision(store)
    if current == head:
        return SchemaAction.CURRENT
    if current is None:
        await _upgrade(store, head)
        return SchemaAction.CREATED
    if current not in known_revisions():
        raise SchemaTooNew(
            f"the store's schema {current!r} is newer than this chargenet (which knows up to {head!r}); "
            "upgrade chargenet instead"
        )
    if not migrate:
        raise SchemaOutdated(
            f"the store's schema {current!r} is older than this chargenet's {head!r}; "
            "run `chargenet migrate` (or `chargenet serve --migrate`) to upgrade it"
        )
    await _upgrade(store, head)
    return SchemaAction.UPGRADED


async def upgrade(store: Store, target: str = "head") -> None:
    await _upgrade(store, target)


async def downgrade(store: Store, target: str) -> None:
    from alembic import command

    async with store.engine.begin() as connection:
        await connection.run_sync(lambda conn: command.downgrade(alembic_config(conn), target))


VERSION_TABLE = "alembic_version"

# Names the schema lock in PostgreSQL's shared advisory lock space.
SCHEMA_LOCK_KEY = 0x63_68_67_73_63_68


async def _upgrade(store: Store, target: str) -> None:
    try:
        async with store.engine.begin() as connection:
            await connection.run_sync(lambda conn: _upgrade_locked(conn, target))
    except (OperationalError, InterfaceError, OSError) as exc:
        raise _unreachable(store, exc) from None


def _upgrade_locked(connection: Connection, target: str) -> None:
    """Upgrade within the caller's transaction, one process at a time: processes starting together on one
    PostgreSQL database queue on a transaction-scoped advisory lock, and those that find the work done by the
    one before them have nothing left to do (SQLite's `BEGIN IMMEDIATE` already serializes them)."""
    from alembic import command

    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
        head = head_revision() if target == "head" else target
        if _read_revision(connection) == head:
            return
    command.upgrade(alembic_config(connection), target)


def _read_revision(connection: Connection) -> str | None:
    revision = None
    if inspect(connection).has_table(VERSION_TABLE):
        versions = list(connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars())  # noqa: S608
        if len(versions) > 1:
            raise StoreCorrupt(f"the store records several schema versions ({', '.join(sorted(versions))})")
        revision = versions[0] if versions else None
    if revision is None:
        tables = set(inspect(connection).get_table_names())
        if tables - {"alembic_version"}:
            raise StoreCorrupt(
                f"the database has tables ({', '.join(sorted(tables)[:5])}) but no chargenet schema version; "
                "it is not a chargenet store"
            )
    return revision


def _reason(exc: BaseException) -> str:
    original = getattr(exc, "orig", None) or exc
    return str(original).splitlines()[0] if str(original) else type(original).__name__


def _unreachable(store: Store, exc: BaseException) -> StoreUnreachable | StoreCorrupt:
    reason = _reason(exc)
    if "file is not a database" in reason or "malformed" in reason:
        return StoreCorrupt(f"the database is not readable: {reason}")
    from sqlalchemy.engine import make_url

    where = make_url(store.url).render_as_string(hide_password=True)
    return StoreUnreachable(f"cannot reach the database {where}: {reason}")
