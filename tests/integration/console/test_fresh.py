"""Figures kept while fresh (console/fresh.py): reused for their lifetime on the injected clock, computed once for
browsers asking together, and dropped when this process commits events, on both backends."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from chargenet.clock import ManualClock
from chargenet.console.fresh import Fresh
from chargenet.domain.events import AuthorizePayload
from chargenet.outbox import Outbox
from chargenet.store.db import Store


def counter() -> tuple[list[int], Callable[[], Awaitable[int]]]:
    computed: list[int] = []

    async def compute() -> int:
        computed.append(len(computed) + 1)
        return computed[-1]

    return computed, compute


async def publish(store: Store, clock: ManualClock) -> None:
    payload = AuthorizePayload.model_validate({"stationId": "ST-1", "idTag": "TAG-1", "status": "Accepted"})
    async with store.transaction() as session:
        await Outbox(clock).publish(session, site_id="site_1", payload=payload)


async def test_a_value_is_reused_while_fresh_and_computed_again_once_it_is_not(clock: ManualClock) -> None:
    fresh: Fresh[int] = Fresh(clock, 5.0)
    computed, compute = counter()
    first = await fresh.get("co_1", compute)
    clock.advance(4.9)
    assert await fresh.get("co_1", compute) == first == (1, first[1])
    clock.advance(0.1)
    assert (await fresh.get("co_1", compute))[0] == 2
    assert computed == [1, 2]


async def test_each_key_has_its_own_value(clock: ManualClock) -> None:
    fresh: Fresh[str] = Fresh(clock, 5.0)

    async def named(key: str) -> str:
        return key.upper()

    assert (await fresh.get("a", lambda: named("a")))[0] == "A"
    assert (await fresh.get("b", lambda: named("b")))[0] == "B"


async def test_browsers_asking_together_share_one_computation(clock: ManualClock) -> None:
    fresh: Fresh[int] = Fresh(clock, 5.0)
    release = asyncio.Event()
    calls = 0

    async def slow() -> int:
        nonlocal calls
        calls += 1
        await release.wait()
        return 42

    askers = [asyncio.create_task(fresh.get("co_1", slow)) for _ in range(5)]
    await asyncio.sleep(0)
    release.set()
    assert [value for value, _ in await asyncio.gather(*askers)] == [42] * 5
    assert calls == 1


async def test_after_a_commit_that_published_events_a_kept_value_lives_only_until_it_settles(
    store: Store, clock: ManualClock
) -> None:
    fresh: Fresh[int] = Fresh(clock, 5.0, settle=1.0)
    computed, compute = counter()
    await fresh.get("co_1", compute)
    await publish(store, clock)
    clock.advance(0.5)
    assert (await fresh.get("co_1", compute))[0] == 1  # a busy network costs one count a second, not one a view
    clock.advance(0.5)
    assert (await fresh.get("co_1", compute))[0] == 2
    clock.advance(0.5)
    assert (await fresh.get("co_1", compute))[0] == 2  # counted after the commit: fresh for its whole lifetime
    assert computed == [1, 2]


async def test_a_value_computed_across_such_a_commit_lives_only_until_it_settles(
    store: Store, clock: ManualClock
) -> None:
    fresh: Fresh[int] = Fresh(clock, 5.0, settle=1.0)
    _, compute = counter()

    async def committed_meanwhile() -> int:
        value = await compute()
        await publish(store, clock)  # landed after the figures were read: they may not show it
        clock.advance(0.1)
        return value

    assert (await fresh.get("co_1", committed_meanwhile))[0] == 1
    clock.advance(1.0)
    assert (await fresh.get("co_1", compute))[0] == 2
