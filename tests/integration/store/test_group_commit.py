"""The store's group commit on both backends, under each failure policy (`Failure.UNIT`, `Failure.BATCH`), with
its options: the ordering key, work handed over without asking for a commit now, bulk handlers. The edge's use of
it has its own tests (tests/integration/edge/test_committer.py), and so has the webhook engine's
(tests/integration/webhooks/test_window.py)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from sqlalchemy import insert, select, text
from sqlalchemy.exc import PendingRollbackError
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.store import group_commit
from chargenet.store.db import Store
from chargenet.store.group_commit import Failure, GroupCommit
from chargenet.store.models import StoreSetting


def inserting(key: str) -> group_commit.Work[str]:
    async def work(session: AsyncSession) -> str:
        await session.execute(insert(StoreSetting).values(key=key, value="v"))
        return key

    return work


async def failing(session: AsyncSession) -> str:
    await session.execute(insert(StoreSetting).values(key="t-x", value="v"))  # a row its failure must take back
    await session.execute(text("SELECT :v"), {"v": 2**70})  # an integer neither backend can hold
    return "never"


async def write(group: GroupCommit, key: str) -> str:
    async with group.unit() as session:
        await session.execute(insert(StoreSetting).values(key=key, value="v"))
    return key


async def keys(store: Store) -> list[str]:
    async with store.transaction() as session:
        return sorted(await session.scalars(select(StoreSetting.key).where(StoreSetting.key.like("t-%"))))


async def test_with_unit_failure_a_failing_work_fails_alone_and_the_rest_of_its_batch_commits(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.UNIT)
    futures = [group.submit(inserting("t-1")), group.submit(failing), group.submit(inserting("t-2"))]
    results = await asyncio.gather(*futures, return_exceptions=True)
    assert results[0] == "t-1" and results[2] == "t-2"
    assert isinstance(results[1], Exception)
    assert group.batches == 1
    assert await keys(store) == ["t-1", "t-2"]


async def test_with_unit_failure_a_failing_bulk_handler_fails_its_own_items_only(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.UNIT, log_failures=False)

    async def insert_all(session: AsyncSession, items: list[Any]) -> None:
        await session.execute(insert(StoreSetting), [{"key": key, "value": "v"} for key in items])

    async def broken(session: AsyncSession, items: list[Any]) -> None:
        await failing(session)  # writes a row, then fails

    results = await asyncio.gather(
        group.bulk(insert_all, "t-1"), group.bulk(broken, "t-x"), write(group, "t-2"), return_exceptions=True
    )
    assert results[0] is None and results[2] == "t-2"
    assert isinstance(results[1], Exception)
    assert await keys(store) == ["t-1", "t-2"]


async def test_with_batch_failure_one_failing_work_rolls_back_its_batch_and_every_unit_gets_its_error(
    store: Store,
) -> None:
    # Ordered: the batch takes all three when it starts, the third one included.
    group = GroupCommit(store, name="test", failure=Failure.BATCH, ordered=True, log_failures=False)
    futures = [group.submit(inserting("t-1")), group.submit(failing), group.submit(inserting("t-2"))]
    results = await asyncio.gather(*futures, return_exceptions=True)
    assert isinstance(results[1], Exception)
    assert results == [results[1]] * 3
    assert group.batches == 0
    assert await keys(store) == []
    assert await group.run(inserting("t-3")) == "t-3"  # the next batch has a transaction of its own
    assert await keys(store) == ["t-3"]


async def test_with_batch_failure_a_failing_unit_body_rolls_back_the_units_sharing_its_batch(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.BATCH, ordered=True, log_failures=False)

    class Refused(Exception):
        pass

    async def refusing() -> None:
        async with group.unit() as session:
            await session.execute(insert(StoreSetting).values(key="t-x", value="v"))
            raise Refused()

    results = await asyncio.gather(write(group, "t-1"), refusing(), write(group, "t-2"), return_exceptions=True)
    assert [type(result) for result in results] == [Refused] * 3
    assert await keys(store) == []


async def test_with_batch_failure_units_an_unordered_batch_had_not_reached_get_a_new_transaction(
    store: Store,
) -> None:
    group = GroupCommit(store, name="test", failure=Failure.BATCH, log_failures=False)
    futures = [group.submit(inserting("t-1")), group.submit(failing), group.submit(inserting("t-2"))]
    results = await asyncio.gather(*futures, return_exceptions=True)
    assert results[0] is results[1] and isinstance(results[1], Exception)
    assert results[2] == "t-2"
    assert await keys(store) == ["t-2"]


async def test_an_ordered_group_runs_each_batch_in_key_order(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.BATCH, ordered=True)
    ran: list[int] = []

    def noting(key: int) -> group_commit.Work[None]:
        async def work(session: AsyncSession) -> None:
            ran.append(key)
            await session.execute(insert(StoreSetting).values(key=f"t-{key}", value="v"))

        return work

    await asyncio.gather(*(group.submit(noting(key), key=key) for key in (3, 1, 2)))
    assert ran == [1, 2, 3]
    assert group.batches == 1


async def test_work_handed_over_without_now_is_committed_only_once_someone_waits_for_it(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.BATCH, delay=60.0)
    future = group.submit(inserting("t-1"), now=False)
    await asyncio.sleep(0.2)
    assert not future.done() and await keys(store) == []
    group.flush()
    assert await future == "t-1"
    await group.close()


async def test_work_handed_over_without_now_is_committed_after_the_delay(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.BATCH, delay=0.05)
    future = group.submit(inserting("t-1"), now=False)
    assert await asyncio.wait_for(future, 5.0) == "t-1"


async def test_work_handed_over_without_now_commits_with_work_that_asks_for_a_commit_now(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.BATCH, delay=60.0)
    later = group.submit(inserting("t-1"), now=False)
    assert await group.run(inserting("t-2")) == "t-2"
    assert later.done() and later.result() == "t-1"
    assert group.batches == 1
    await group.close()


async def test_settled_commits_and_waits_for_everything_handed_over_so_far(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.UNIT, delay=60.0)
    futures = [group.submit(inserting("t-1"), now=False), group.submit(inserting("t-2"), now=False)]
    await asyncio.wait_for(group.settled(), 5.0)
    assert all(future.done() for future in futures)
    assert await keys(store) == ["t-1", "t-2"]


async def test_submitted_work_is_committed_though_the_task_that_handed_it_over_was_cancelled(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.BATCH, delay=60.0)
    handed_over = asyncio.Event()

    async def hand_over() -> None:
        future = group.submit(inserting("t-1"), now=False)  # its batch starts only after the cancellation
        handed_over.set()
        await future

    task = asyncio.create_task(hand_over())
    await handed_over.wait()
    task.cancel()
    # Not `settled()`: the cancellation cancels the future the task awaited, so nothing is left for it to wait on,
    # and on PostgreSQL the read below could overtake the batch's commit. The batch is awaited instead.
    group.flush()
    async with asyncio.timeout(5):
        while group.batches < 1:
            await asyncio.sleep(0.01)
    assert await keys(store) == ["t-1"]


async def test_with_unit_failure_a_bulk_that_fails_is_written_item_by_item_and_only_the_bad_item_fails(
    store: Store,
) -> None:
    async with store.transaction() as session:
        await session.execute(insert(StoreSetting).values(key="t-taken", value="v"))
    group = GroupCommit(store, name="test", failure=Failure.UNIT, log_failures=False)

    async def insert_all(session: AsyncSession, items: list[Any]) -> None:
        await session.execute(insert(StoreSetting), [{"key": key, "value": "v"} for key in items])

    results = await asyncio.gather(
        *(group.bulk(insert_all, key) for key in ("t-1", "t-taken", "t-2")), return_exceptions=True
    )
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], Exception)
    assert await keys(store) == ["t-1", "t-2", "t-taken"]


async def test_with_unit_failure_settled_waits_for_a_bulk_item_whose_handler_is_running(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.UNIT)
    running, release = asyncio.Event(), asyncio.Event()

    async def slow(session: AsyncSession, items: list[Any]) -> None:
        running.set()
        await release.wait()
        await session.execute(insert(StoreSetting), [{"key": key, "value": "v"} for key in items])

    written = asyncio.create_task(group.bulk(slow, "t-slow"))
    await running.wait()
    settled = asyncio.create_task(group.settled())
    await asyncio.sleep(0.05)
    assert not settled.done()
    release.set()
    await settled
    assert written.done() and await keys(store) == ["t-slow"]


async def test_a_bulk_handler_gets_the_items_of_a_batch_in_one_call(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.UNIT)
    calls: list[list[Any]] = []

    async def insert_all(session: AsyncSession, items: list[Any]) -> None:
        calls.append(items)
        await session.execute(insert(StoreSetting), [{"key": key, "value": "v"} for key in items])

    await asyncio.gather(*(group.bulk(insert_all, f"t-{n}") for n in range(3)))
    assert calls == [["t-0", "t-1", "t-2"]]
    assert await keys(store) == ["t-0", "t-1", "t-2"]


async def test_a_bulk_item_handed_over_without_now_is_written_with_the_next_batch_and_nobody_waits(
    store: Store,
) -> None:
    group = GroupCommit(store, name="test", failure=Failure.UNIT, delay=60.0)

    async def insert_all(session: AsyncSession, items: list[Any]) -> None:
        await session.execute(insert(StoreSetting), [{"key": key, "value": "v"} for key in items])

    later = group.submit_bulk(insert_all, "t-1", now=False)
    assert await keys(store) == [] and not later.done()
    await write(group, "t-2")
    assert later.done() and later.exception() is None
    assert await keys(store) == ["t-1", "t-2"]
    assert group.batches == 1
    await group.close()


async def insert_all(session: AsyncSession, items: list[Any]) -> None:
    await session.execute(insert(StoreSetting), [{"key": key, "value": "v"} for key in items])


@pytest.mark.parametrize("failure", list(Failure))
async def test_bulk_items_handed_over_with_units_are_written_in_their_batch_in_one_call(
    store: Store, failure: Failure
) -> None:
    group = GroupCommit(store, name="test", failure=failure)
    calls: list[list[Any]] = []

    async def recording(session: AsyncSession, items: list[Any]) -> None:
        calls.append(items)
        await insert_all(session, items)

    async def unit_with_item(key: str) -> None:
        async with group.unit() as session:
            await session.execute(insert(StoreSetting).values(key=key, value="v"))
            item = group.submit_bulk_with_unit(recording, f"{key}-item")
        await item

    await asyncio.gather(unit_with_item("t-1"), unit_with_item("t-2"))
    assert calls == [["t-1-item", "t-2-item"]]
    assert group.batches == 1
    assert await keys(store) == ["t-1", "t-1-item", "t-2", "t-2-item"]


async def test_a_batch_writes_its_bulk_items_in_the_order_they_were_handed_over_with_units_or_not(
    store: Store,
) -> None:
    group = GroupCommit(store, name="test", failure=Failure.UNIT)
    calls: list[list[Any]] = []

    async def recording(session: AsyncSession, items: list[Any]) -> None:
        calls.append(items)
        await insert_all(session, items)

    async with group.unit():
        with_unit = group.submit_bulk_with_unit(recording, "t-first")
        alone = group.submit_bulk(recording, "t-second")  # later, without a unit, while the body runs: one batch
    await asyncio.gather(with_unit, alone)
    assert calls == [["t-first", "t-second"]]
    await group.close()


async def test_a_bulk_item_handed_over_with_a_unit_that_fails_is_dropped_with_it(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.UNIT, log_failures=False)
    items: list[asyncio.Future[None]] = []

    async def failing_unit() -> None:
        async with group.unit() as session:
            await session.execute(insert(StoreSetting).values(key="t-failed", value="v"))
            items.append(group.submit_bulk_with_unit(insert_all, "t-failed-item"))
            raise ValueError("the unit fails after handing its item over")

    async def unit_with_item() -> None:
        async with group.unit() as session:
            await session.execute(insert(StoreSetting).values(key="t-kept", value="v"))
            item = group.submit_bulk_with_unit(insert_all, "t-kept-item")
        await item

    results = await asyncio.gather(failing_unit(), unit_with_item(), return_exceptions=True)
    assert isinstance(results[0], ValueError) and results[1] is None
    assert items[0].cancelled()
    assert await keys(store) == ["t-kept", "t-kept-item"]


async def test_an_item_handed_over_with_a_unit_whose_batch_fails_is_not_reported_as_never_retrieved(
    store: Store,
) -> None:
    group = GroupCommit(store, name="test", failure=Failure.BATCH, ordered=True, log_failures=False)
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))

    async def unit_handing_over() -> None:
        async with group.unit() as session:
            await session.execute(insert(StoreSetting).values(key="t-1", value="v"))
            group.submit_bulk_with_unit(insert_all, "t-1-item")  # its caller fails with the batch, never looking

    async def refusing() -> None:
        async with group.unit():
            raise ValueError("refused: the batch both units share fails")

    try:
        results = await asyncio.gather(unit_handing_over(), refusing(), return_exceptions=True)
        assert all(isinstance(result, Exception) for result in results)
        del results
        gc.collect()
        assert reported == []
    finally:
        loop.set_exception_handler(None)
    assert await keys(store) == []


async def test_a_task_started_in_a_units_body_cannot_hand_items_over_once_the_body_ended(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.UNIT)
    body_ended = asyncio.Event()

    async def later() -> None:
        await body_ended.wait()
        group.submit_bulk_with_unit(insert_all, "t-late")

    async with group.unit():
        straggler = asyncio.create_task(later())  # carries the body's context past its end
    body_ended.set()
    with pytest.raises(RuntimeError):
        await straggler
    await group.close()


async def test_a_bulk_item_is_handed_over_with_a_unit_only_from_that_units_body(store: Store) -> None:
    group = GroupCommit(store, name="test", failure=Failure.UNIT)
    with pytest.raises(RuntimeError):
        group.submit_bulk_with_unit(insert_all, "t-1")
    async with GroupCommit(store, name="other", failure=Failure.UNIT).unit():
        with pytest.raises(RuntimeError):
            group.submit_bulk_with_unit(insert_all, "t-1")


@pytest.mark.parametrize("failure", list(Failure))
async def test_a_unit_cancelled_as_its_turn_comes_does_not_hold_up_its_batch(
    store: Store, failure: Failure, monkeypatch: pytest.MonkeyPatch
) -> None:
    group = GroupCommit(store, name="test", failure=failure)
    callers: list[asyncio.Task[None]] = []
    lease = group_commit._Lease

    class CancelsItsCaller(asyncio.Future[AsyncSession]):
        def set_result(self, result: AsyncSession) -> None:
            super().set_result(result)
            callers[0].cancel()  # the session is handed over, and the caller is cancelled before it resumes

    def leased(handoff: Any, finished: Any, outcome: Any) -> Any:
        monkeypatch.undo()  # this unit only
        return lease(CancelsItsCaller(), finished, outcome)

    monkeypatch.setattr(group_commit, "_Lease", leased)

    async def never_runs() -> None:
        async with group.unit():
            raise AssertionError("the body of a cancelled unit ran")

    callers.append(asyncio.create_task(never_runs()))
    following = asyncio.create_task(write(group, "t-1"))
    assert await asyncio.wait_for(following, 5.0) == "t-1"
    assert callers[0].cancelled()
    await group.close()


def carrier_and_rider(store: Store) -> tuple[GroupCommit, GroupCommit]:
    """A committer that carries (as the edge's) and one that rides it (as the webhook engine's)."""
    carrier = GroupCommit(store, name="test-carrier", failure=Failure.UNIT, log_failures=False, carries=True)
    rider = GroupCommit(store, name="test-rider", failure=Failure.BATCH, ordered=True, log_failures=False, rides=True)
    return carrier, rider


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # only SQLite's committers carry and ride
async def test_work_a_rider_is_handed_while_the_closing_carrier_ends_its_batch_commits(store: Store) -> None:
    carrier, rider = carrier_and_rider(store)
    riding, hold = asyncio.Event(), asyncio.Event()

    async def held(session: AsyncSession) -> None:
        riding.set()
        await hold.wait()

    carrier.submit(inserting("t-carried"))
    carried = rider.submit(held)
    await riding.wait()  # the rider's batch runs in the carrier's
    closing = asyncio.create_task(carrier.close())
    await asyncio.sleep(0)  # the carrier's batch is cancelled, and has not ended yet
    assert not closing.done()
    assert await asyncio.wait_for(rider.run(inserting("t-after")), timeout=10) == "t-after"
    await closing
    await asyncio.gather(carried, return_exceptions=True)
    assert await keys(store) == ["t-after"]
    await rider.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # only SQLite's committers carry and ride
async def test_a_rider_that_breaks_the_session_rolls_back_the_carriers_batch(store: Store) -> None:
    carrier, rider = carrier_and_rider(store)

    async def breaking(session: AsyncSession) -> None:
        raise PendingRollbackError("the session's transaction was rolled back by an error", None, None)

    carried = carrier.submit(inserting("t-carried"))
    broken = rider.submit(breaking)
    outcomes = await asyncio.gather(carried, broken, return_exceptions=True)
    assert all(isinstance(outcome, Exception) for outcome in outcomes)
    assert rider.carried == 0
    assert await keys(store) == []
    await carrier.close()
    await rider.close()
