"""The store's commit hooks on both backends: a callback runs once its transaction has committed and never when it
rolls back; one registered in a savepoint follows the savepoint (dropped when it rolls back, passed on when it
is released) and runs only at the outermost commit, as the group commit's units need; a key makes it run once
a transaction; a before-commit callback may still write."""

from __future__ import annotations

import asyncio
import logging
from functools import partial

import pytest
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from chargenet.store.commit_hooks import after_commit, before_commit
from chargenet.store.db import Store
from chargenet.store.group_commit import Failure, GroupCommit
from chargenet.store.models import StoreSetting


class Ran(list[str]):
    """What ran, in order: `ran.call("x")` is a callback that adds "x"."""

    def call(self, name: str) -> partial[None]:
        return partial(self.append, name)


async def test_a_callback_runs_once_the_transaction_has_committed(store: Store) -> None:
    ran = Ran()
    async with store.transaction() as session:
        after_commit(session, ran.call("a"))
        after_commit(session, ran.call("b"))
        await session.execute(insert(StoreSetting).values(key="t-1", value="v"))
        await session.flush()
        assert ran == []
    assert ran == ["a", "b"]


async def test_a_callback_of_a_transaction_that_rolls_back_never_runs(store: Store) -> None:
    ran = Ran()
    with pytest.raises(RuntimeError):
        async with store.transaction() as session:
            after_commit(session, ran.call("a"))
            raise RuntimeError("the unit of work fails")
    async with store.transaction() as session:
        after_commit(session, ran.call("b"))
    assert ran == ["b"]


async def test_a_callback_of_a_released_savepoint_runs_at_the_commit_and_one_rolled_back_never(store: Store) -> None:
    ran = Ran()
    async with store.transaction() as session:
        for name in ("a", "b", "c"):  # as the group commit runs its units: each in a savepoint
            savepoint = await session.begin_nested()
            after_commit(session, ran.call(name))
            if name == "b":
                await savepoint.rollback()
            else:
                await savepoint.commit()
        assert ran == []  # released savepoints are not yet committed
    assert ran == ["a", "c"]


async def test_savepoints_within_savepoints_pass_their_callbacks_outwards_only_while_released(store: Store) -> None:
    ran = Ran()
    async with store.transaction() as session:
        async with session.begin_nested():
            after_commit(session, ran.call("outer kept"))
            async with session.begin_nested():
                after_commit(session, ran.call("inner kept"))
            with pytest.raises(RuntimeError):
                async with session.begin_nested():
                    after_commit(session, ran.call("inner rolled back"))
                    raise RuntimeError("the inner savepoint fails")
        with pytest.raises(RuntimeError):
            async with session.begin_nested():
                async with session.begin_nested():
                    after_commit(session, ran.call("released into one rolled back"))
                raise RuntimeError("the outer savepoint fails")
    assert ran == ["outer kept", "inner kept"]


async def test_a_keyed_callback_runs_once_a_transaction_and_again_after_its_savepoint_was_rolled_back(
    store: Store,
) -> None:
    ran = Ran()
    async with store.transaction() as session:
        with pytest.raises(RuntimeError):
            async with session.begin_nested():
                after_commit(session, ran.call("first"), key="wake")
                raise RuntimeError("dropped with its savepoint")
        for name in ("second", "third"):
            async with session.begin_nested():
                after_commit(session, ran.call(name), key="wake")
        after_commit(session, ran.call("fourth"), key="wake")
    async with store.transaction() as session:
        after_commit(session, ran.call("next transaction"), key="wake")
    assert ran == ["second", "next transaction"]


async def test_a_before_commit_callback_writes_in_the_transaction_and_is_dropped_with_it(store: Store) -> None:
    def insert_marker(key: str, session: Session) -> None:
        session.execute(insert(StoreSetting).values(key=key, value="v"))

    async with store.transaction() as session:
        before_commit(session, partial(insert_marker, "t-committed"), key="marker")
        before_commit(session, partial(insert_marker, "t-twice"), key="marker")
        async with session.begin_nested():
            before_commit(session, partial(insert_marker, "t-released"))
        with pytest.raises(RuntimeError):
            async with session.begin_nested():
                before_commit(session, partial(insert_marker, "t-rolled-back"))
                raise RuntimeError("dropped with its savepoint")
    with pytest.raises(RuntimeError):
        async with store.transaction() as session:
            before_commit(session, partial(insert_marker, "t-never"))
            raise RuntimeError("the unit of work fails")
    async with store.read() as session:
        written = sorted(await session.scalars(select(StoreSetting.key).where(StoreSetting.key.like("t-%"))))
    assert written == ["t-committed", "t-released"]


@pytest.mark.expected_traceback("ValueError: broken callback")
async def test_a_failing_callback_is_logged_and_neither_fails_the_commit_nor_stops_the_others(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    ran = Ran()

    def fail() -> None:
        raise ValueError("broken callback")

    with caplog.at_level(logging.ERROR, logger="chargenet.store.commit_hooks"):
        async with store.transaction() as session:
            after_commit(session, fail)
            after_commit(session, ran.call("after it"))
            await session.execute(insert(StoreSetting).values(key="t-1", value="v"))
    async with store.read() as session:
        assert await session.get(StoreSetting, "t-1") is not None
    assert ran == ["after it"]
    assert [record.exc_info[0] for record in caplog.records if record.exc_info] == [ValueError]


async def test_the_callbacks_of_a_group_commits_failing_unit_are_dropped_and_the_others_run_at_its_commit(
    store: Store,
) -> None:
    ran = Ran()
    group = GroupCommit(store, name="test", failure=Failure.UNIT, log_failures=False)

    def unit(name: str, fails: bool) -> object:
        async def work(session: object) -> None:
            after_commit(session, ran.call(name))  # type: ignore[arg-type]
            if fails:
                raise RuntimeError(f"{name} fails")

        return work

    futures = [group.submit(unit(name, name == "b")) for name in ("a", "b", "c")]  # type: ignore[arg-type]
    results = await asyncio.gather(*futures, return_exceptions=True)
    assert [isinstance(result, RuntimeError) for result in results] == [False, True, False]
    assert group.batches == 1
    assert ran == ["a", "c"]
