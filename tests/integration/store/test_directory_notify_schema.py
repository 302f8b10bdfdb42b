"""Migration 0038 on both backends: on PostgreSQL a bump of the directory version is notified with the version it
wrote, heard by the committing process before its commit returns; rolled back, the bump notifies nothing; on
SQLite nothing changes. The version is bumped either way."""

from __future__ import annotations

from sqlalchemy import text

from chargenet.store import schema
from chargenet.store.db import Store
from chargenet.store.notify import DIRECTORY

AT = "'2026-01-01 00:00:00+00:00'"


async def bump(store: Store, n: int) -> int:
    """A site made and deleted (a change of the charge point list's structure); the version after it."""
    async with store.engine.begin() as connection:
        await connection.execute(
            text(f"INSERT INTO sites (id, company_id, name, created_at) VALUES ('s{n}', 'c', 'S', {AT})")
        )
        await connection.execute(text(f"DELETE FROM sites WHERE id = 's{n}'"))
    async with store.engine.connect() as connection:
        return int((await connection.execute(text("SELECT version FROM directory_version"))).scalar_one())


async def test_a_bump_of_the_directory_version_is_notified_with_it_and_rolls_back(empty_database_url: str) -> None:
    store = Store(empty_database_url)
    heard: list[str | None] = []
    try:
        await schema.upgrade(store, "0036")
        async with store.engine.begin() as connection:
            await connection.execute(text(f"INSERT INTO companies (id, name, created_at) VALUES ('c', 'Acme', {AT})"))
        await schema.upgrade(store, "0038")
        with store.listener.hearing(DIRECTORY, heard.append):
            notified = await bump(store, 1)
            assert heard[:1] == ([str(notified)] if store.dialect == "postgresql" else [])
            await schema.downgrade(store, "0036")
            assert await bump(store, 2) > notified
            assert set(heard) == ({str(notified)} if store.dialect == "postgresql" else set())  # the first only
    finally:
        await store.dispose()
