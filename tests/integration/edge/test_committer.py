"""The edge's group commit on both backends: a unit that fails, however it fails, is rolled back where it failed and
its session is handed to nobody else (no PendingRollbackError for whatever runs next)."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import event, insert, select, text
from sqlalchemy.exc import IntegrityError

from chargenet.edge.committer import GroupCommitter
from chargenet.observability import log_context
from chargenet.store.db import Store
from chargenet.store.models import StoreSetting
from chargenet.store.notify import OUTBOX, notify


def slow_statement(store: Store) -> str:
    if store.dialect == "postgresql":
        return "SELECT pg_sleep(0.5)"
    # About half a second of work inside SQLite, where no sleep function exists.
    return "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1500000) SELECT count(*) FROM c"


async def write(committer: GroupCommitter, key: str) -> str:
    async with committer.unit() as session:
        await session.execute(insert(StoreSetting).values(key=key, value="v"))
    return key


async def keys(store: Store) -> list[str]:
    async with store.transaction() as session:
        return sorted(await session.scalars(select(StoreSetting.key).where(StoreSetting.key.like("t-%"))))


async def test_unit_failing_on_an_integer_the_store_cannot_hold_fails_alone(store: Store) -> None:
    committer = GroupCommitter(store)

    async def too_big() -> None:
        async with committer.unit() as session:
            await session.execute(text("SELECT :v"), {"v": 2**70})

    results = await asyncio.gather(write(committer, "t-1"), too_big(), write(committer, "t-2"), return_exceptions=True)
    assert results[0] == "t-1" and results[2] == "t-2"
    assert isinstance(results[1], Exception)
    assert await write(committer, "t-3") == "t-3"
    assert await keys(store) == ["t-1", "t-2", "t-3"]
    await committer.close()


async def test_unit_cancelled_mid_statement_hands_its_session_to_nobody(store: Store) -> None:
    committer = GroupCommitter(store)
    started = asyncio.Event()

    async def slow() -> None:
        async with committer.unit() as session:
            started.set()
            await session.execute(text(slow_statement(store)))

    task = asyncio.create_task(slow())
    await started.wait()
    others = [asyncio.create_task(write(committer, f"t-{n}")) for n in (1, 2)]
    await asyncio.sleep(0.1)
    task.cancel()
    results = await asyncio.gather(*others, return_exceptions=True)
    assert results == ["t-1", "t-2"]
    assert await write(committer, "t-3") == "t-3"
    assert await keys(store) == ["t-1", "t-2", "t-3"]
    await committer.close()


async def test_unit_whose_pending_row_collides_at_flush_fails_alone(store: Store) -> None:
    committer = GroupCommitter(store)
    await write(committer, "t-0")

    async def duplicate() -> None:
        async with committer.unit() as session:
            session.add(StoreSetting(key="t-0", value="again"))  # left pending: only a flush can find the clash

    results = await asyncio.gather(
        write(committer, "t-1"), duplicate(), write(committer, "t-2"), return_exceptions=True
    )
    assert results[0] == "t-1" and results[2] == "t-2"
    assert isinstance(results[1], IntegrityError)
    assert await keys(store) == ["t-0", "t-1", "t-2"]
    await committer.close()


async def test_the_shared_loop_does_not_carry_the_station_of_the_unit_that_started_it(store: Store) -> None:
    committer = GroupCommitter(store)
    seen: list[str | None] = []
    loop = committer._loop

    async def watched() -> None:
        seen.append(log_context.station_id.get())
        await loop()

    committer._loop = watched  # type: ignore[method-assign]
    with log_context.station("CS-1"):
        assert await write(committer, "t-1") == "t-1"
    await committer.close()
    assert seen == [None]


async def test_a_batch_whose_units_each_notify_sends_one_notification_at_its_commit(store: Store) -> None:
    committer = GroupCommitter(store)
    sent: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "pg_notify" in statement:
            sent.append(statement)

    event.listen(store.engine.sync_engine, "before_cursor_execute", count)

    async def publishing(key: str) -> None:
        async with committer.unit() as session:
            await session.execute(insert(StoreSetting).values(key=key, value="v"))
            notify(session, OUTBOX)  # what each unit that publishes an event does

    await asyncio.gather(*(publishing(f"t-{n}") for n in range(5)))
    assert committer.batches == 1
    assert len(sent) == (1 if store.dialect == "postgresql" else 0)
    await committer.close()
