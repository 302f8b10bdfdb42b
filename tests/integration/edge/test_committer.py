"""The edge's group commit on both backends: a unit that fails, however it fails, is rolled back where it failed and
its session is handed to nobody else (no PendingRollbackError for whatever runs next). On SQLite it carries the
webhook engine's acknowledgements (a committer that rides, as the engine's does) in its batches."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import event, insert, select, text
from sqlalchemy.exc import IntegrityError

from chargenet.edge.committer import GroupCommitter
from chargenet.observability import log_context
from chargenet.store.db import Store
from chargenet.store.group_commit import Failure, GroupCommit
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


def acknowledgements(store: Store) -> GroupCommit:
    """A committer configured as the webhook engine's."""
    return GroupCommit(store, name="test-acks", failure=Failure.BATCH, ordered=True, log_failures=False, rides=True)


class HeldStationBatch:
    """A station's unit that writes its row and holds its batch open until released."""

    def __init__(self, committer: GroupCommitter) -> None:
        self.written, self.release = asyncio.Event(), asyncio.Event()
        self.task = asyncio.create_task(self._station(committer))

    async def _station(self, committer: GroupCommitter) -> str:
        async with committer.unit() as session:
            await session.execute(insert(StoreSetting).values(key="t-station", value="v"))
            self.written.set()
            await self.release.wait()
        return "committed"


async def test_acknowledgements_handed_over_during_a_station_batch_commit_with_it_on_sqlite(store: Store) -> None:
    committer, acks = GroupCommitter(store), acknowledgements(store)

    def acknowledge(key: str) -> Any:
        async def work(session: Any) -> str | None:
            await session.execute(insert(StoreSetting).values(key=key, value="v"))
            # The station's row: before its commit, seen only by the transaction that wrote it.
            return await session.scalar(select(StoreSetting.value).where(StoreSetting.key == "t-station"))

        return work

    transactions: list[float] = []
    store.time_units(transaction=transactions.append, read=lambda _: None)
    batch = HeldStationBatch(committer)
    await batch.written.wait()
    acknowledged = acks.submit(acknowledge("t-ack-1"))
    batch.release.set()
    await batch.task
    sqlite = store.dialect == "sqlite"
    seen = await acknowledged
    assert seen == "v" or not sqlite
    assert (committer.batches, acks.batches, acks.carried) == (1, 1, 1 if sqlite else 0)
    assert len(transactions) == (1 if sqlite else 2)
    # With no station batch running, acknowledgements commit on their own.
    assert await acks.submit(acknowledge("t-ack-2")) == "v"
    assert (acks.batches, acks.carried) == (2, 1 if sqlite else 0)
    assert await keys(store) == ["t-ack-1", "t-ack-2", "t-station"]
    await committer.close()


async def test_acknowledgements_that_fail_in_a_station_batch_fail_together_and_the_station_commits(
    store: Store,
) -> None:
    committer, acks = GroupCommitter(store), acknowledgements(store)

    async def acknowledge(session: Any) -> None:
        await session.execute(insert(StoreSetting).values(key="t-ack", value="v"))

    async def too_big(session: Any) -> None:
        await session.execute(text("SELECT :v"), {"v": 2**70})

    batch = HeldStationBatch(committer)
    await batch.written.wait()
    results = acks.submit(acknowledge, key=1), acks.submit(too_big, key=2)
    batch.release.set()
    assert await batch.task == "committed"
    outcomes = await asyncio.gather(*results, return_exceptions=True)
    assert all(isinstance(outcome, Exception) for outcome in outcomes)
    assert await keys(store) == ["t-station"]
    await committer.close()
