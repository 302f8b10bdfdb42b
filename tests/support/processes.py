"""Two "processes" sharing one PostgreSQL database in one test: two `Store`s, each with its own engine, pool and
listening connection, as two `chargenet serve` processes have; and a wait for what one of them does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from chargenet.clock import Clock
from chargenet.store import schema
from chargenet.store.db import Store
from tests.conftest import create_pg_database, drop_pg_database

WITHIN = 5.0  # seconds a notification may take on a loaded test machine: a bound, never waited out when all is well


@asynccontextmanager
async def two_stores(clock: Clock) -> AsyncIterator[tuple[Store, Store]]:
    """Two stores on a new database at the latest schema, dropped at the end."""
    url = await create_pg_database()
    first = Store(url, clock=clock)
    second = Store(url, clock=clock)
    try:
        await schema.prepare_schema(first)
        yield first, second
    finally:
        await first.dispose()
        await second.dispose()
        await drop_pg_database(url)


async def eventually(condition: Callable[[], bool], within: float = WITHIN) -> None:
    async with asyncio.timeout(within):
        while not condition():
            await asyncio.sleep(0.01)


def results_of(owner: object, method: str) -> list[object]:
    """Replace the coroutine method `method` of the object `owner` by one that also keeps each call's result: the
    list it returns is how many times it ran, and with what (a feed's reads, say)."""
    results: list[object] = []
    original = getattr(owner, method)

    async def kept(*args: object, **kwargs: object) -> object:
        results.append(await original(*args, **kwargs))
        return results[-1]

    setattr(owner, method, kept)
    return results
