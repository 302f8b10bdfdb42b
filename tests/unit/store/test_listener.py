"""The store's listener without a server: it connects only once something subscribes, and a server that refuses
is asked again after growing waits on the injected clock, not in a spin."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from chargenet.clock import ManualClock
from chargenet.store.notify import Listener, reconnect_delay


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_nothing_connects_until_something_subscribes_and_a_refusal_is_retried_after_growing_waits(
    clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts: list[dict[str, Any]] = []

    async def refuse(**arguments: Any) -> asyncpg.Connection:
        attempts.append(arguments)
        raise ConnectionRefusedError("nobody listens on that port")

    monkeypatch.setattr(asyncpg, "connect", refuse)
    listener = Listener({"host": "127.0.0.1", "port": 1}, clock)
    stopping = asyncio.Event()
    task = asyncio.create_task(listener.run(stopping))
    await settle()
    assert attempts == []
    listener.subscribe("chargenet_test")
    await settle()
    assert len(attempts) == 1 and attempts[0]["port"] == 1
    for failures in (1, 2, 3):
        clock.advance(reconnect_delay(failures) / 2)
        await settle()
        assert len(attempts) == failures  # still waiting
        clock.advance(reconnect_delay(failures) / 2)
        await settle()
        assert len(attempts) == failures + 1
    assert not listener.listening("chargenet_test")
    stopping.set()
    await task


async def test_a_listener_without_a_server_to_ask_runs_until_the_process_stops(clock: ManualClock) -> None:
    listener = Listener(None, clock)  # SQLite
    woken = listener.subscribe("chargenet_test")
    stopping = asyncio.Event()
    task = asyncio.create_task(listener.run(stopping))
    await settle()
    assert not task.done() and not woken.is_set() and not listener.enabled
    stopping.set()
    await task
