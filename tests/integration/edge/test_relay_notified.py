"""On PostgreSQL a command for a station another process holds waits for no poll: the asker's insert wakes the
holder's relay, and the holder's answer wakes the asker. Two processes are two `Store`s on one database; both
sides' polls are an hour apart here (the relay's on a clock that does not move), so only the notifications can
explain an answer within seconds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from chargenet.clock import ManualClock
from chargenet.edge import relay
from chargenet.edge.ocpp16.frames import Payload
from chargenet.keys import KeyStore
from chargenet.store.db import Store
from chargenet.store.models import StationPresence
from chargenet.store.notify import COMMAND_ANSWERS, STATION_COMMANDS
from tests.factories import make_tenant
from tests.support.processes import WITHIN, eventually, two_stores

AN_HOUR = 3600.0


@pytest.fixture
async def stores(clock: ManualClock) -> AsyncIterator[tuple[Store, Store]]:
    async with two_stores(clock) as stores:
        yield stores


async def test_a_command_asked_through_one_store_is_answered_by_the_relay_of_another_without_a_poll(
    stores: tuple[Store, Store], clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asking, holding = stores
    keys = KeyStore(tmp_path / "keys")
    keys.ensure()
    await make_tenant(asking, keys, clock.now(), station_id="ST-1")
    async with asking.transaction() as session:
        session.add(StationPresence(station_id="ST-1", connected=True, last_seen_at=clock.now()))
    monkeypatch.setattr(relay, "ASKER_POLL", AN_HOUR)
    monkeypatch.setattr(relay, "ASKER_POLL_LISTENING", AN_HOUR)
    sent: list[tuple[str, str, Payload]] = []

    async def send(station_id: str, action: str, payload: Payload) -> Payload:
        sent.append((station_id, action, payload))
        return {"status": "Accepted"}

    worker = relay.CommandRelay(holding, clock, lambda: {"ST-1"}, send, interval=AN_HOUR, listening_interval=AN_HOUR)
    rounds: list[None] = []
    run_once = worker.run_once

    async def counted() -> None:
        rounds.append(await run_once())

    monkeypatch.setattr(worker, "run_once", counted)
    asking.listener.subscribe(COMMAND_ANSWERS)  # the asking process listens for answers before it asks
    stopping = asyncio.Event()
    tasks = [
        asyncio.create_task(asking.listener.run(stopping)),
        asyncio.create_task(holding.listener.run(stopping)),
        asyncio.create_task(worker.run(stopping)),
    ]
    try:
        # The relay's first round, then the one its LISTEN taking effect wakes; then it waits for an hour.
        await eventually(
            lambda: (
                holding.listener.listening(STATION_COMMANDS)
                and asking.listener.listening(COMMAND_ANSWERS)
                and len(rounds) >= 2
            )
        )
        async with asyncio.timeout(WITHIN):
            answer = await relay.forward(
                asking, clock, "ST-1", "Reset", {"type": "Soft"}, answer_timeout=timedelta(seconds=30)
            )
    finally:
        stopping.set()
        await asyncio.gather(*tasks)
    assert answer == {"status": "Accepted"}
    assert sent == [("ST-1", "Reset", {"type": "Soft"})]
