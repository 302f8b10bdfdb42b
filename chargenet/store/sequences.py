"""Ids from a named counter in the database, the same on SQLite and PostgreSQL.

Incrementing the row locks it until the caller's transaction ends, so two processes never hand out the same
value; a rolled-back transaction gives its value back. Transaction ids (decisions.md §4: positive, unique
across the service, shared by OCPP stations and meters) come from `TRANSACTION_IDS`.
"""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.store.models.sequences import IdSequence

TRANSACTION_IDS = "transaction_id"
# Station firmware stores transaction ids as signed 32-bit integers.
MAX_TRANSACTION_ID = 2**31 - 1


async def next_value(session: AsyncSession, name: str) -> int:
    dialect = session.get_bind().dialect.name
    insert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(IdSequence)
    await session.execute(insert.values(name=name, last_value=0).on_conflict_do_nothing())
    result = await session.execute(
        update(IdSequence)
        .where(IdSequence.name == name)
        .values(last_value=IdSequence.last_value + 1)
        .returning(IdSequence.last_value)
    )
    return int(result.scalar_one())


async def next_transaction_id(session: AsyncSession) -> int:
    value = await next_value(session, TRANSACTION_IDS)
    if value > MAX_TRANSACTION_ID:
        raise OverflowError("the transaction id sequence has passed 2^31 - 1")
    return value
