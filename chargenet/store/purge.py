"""Deleting old rows in short transactions.

A purge that deletes everything past its cutoff in one statement holds the write lock for as long as that takes: on
SQLite every other writer of every process waits for it, stations' Boots and statuses among them. After a process
was down for a day, the message log's first purge is a day of frames. So old rows go `batch` at a time, each batch
its own transaction, and writers get the lock between batches. Each batch runs off the event loop on SQLite
(`LONG`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Table, delete, select, tuple_

from chargenet.store.db import LONG, Store

PURGE_BATCH = 2000  # rows a purge transaction deletes at most


async def purge_in_batches(
    store: Store, table: Table, condition: ColumnElement[bool], *, batch: int = PURGE_BATCH
) -> int:
    """Delete the rows of `table` that match `condition`, at most `batch` a transaction; returns how many."""
    key: Any = table.primary_key.columns.values()
    key_of = key[0] if len(key) == 1 else tuple_(*key)
    old = select(*key).where(condition).limit(batch)
    statement = delete(table).where(key_of.in_(old)).execution_options(**LONG)
    total = 0
    while True:
        async with store.transaction() as session:
            result = await session.execute(statement)
        deleted = int(getattr(result, "rowcount", 0) or 0)
        total += deleted
        if deleted < batch:
            return total
