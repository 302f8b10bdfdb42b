"""Commands reach a station whose connection another process holds: two chargenet instances share one store
(as two `chargenet serve` processes share one PostgreSQL), the station is connected to the first, and the
second is asked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from chargenet.app import AppContext
from chargenet.edge import relay
from chargenet.errors import StationAnswerFailed, StationDidNotAnswer, StationNotConnected
from chargenet.simulators.station import AnswerWithError, SimulatedStation
from chargenet.store.models import StationCommand, StationPresence
from tests.factories import partner_token
from tests.integration.edge.conftest import Served, serve_chargenet


@pytest.fixture
async def other(served: Served, tmp_path: Path, database_url: str) -> AsyncIterator[tuple[AppContext, int]]:
    """A second instance on the same store and keys folder."""
    context, server, task, port = await serve_chargenet(tmp_path, database_url)
    assert context.edge is not None
    context.edge.command_timeout = timedelta(seconds=2)
    yield context, port
    server.should_exit = True
    await task
    await context.close()


@pytest.fixture
async def station(served: Served, station: SimulatedStation) -> SimulatedStation:
    await served.edge.message_log.run_once()  # the station's presence is written
    return station


async def _commands_left(context: AppContext) -> int:
    async with context.store.transaction() as session:
        return int(await session.scalar(select(func.count()).select_from(StationCommand)) or 0)


async def test_a_command_asked_of_another_process_is_sent_once_and_answered(
    other: tuple[AppContext, int], station: SimulatedStation
) -> None:
    context, _ = other
    assert context.edge is not None
    answer = await context.edge.command("CS-1", "Reset", {"type": "Soft"})
    assert answer == {"status": "Accepted"}
    assert station.received_calls == [("Reset", {"type": "Soft"})]
    assert await _commands_left(context) == 0


async def test_the_api_of_another_process_reaches_the_station(
    served: Served, other: tuple[AppContext, int], station: SimulatedStation
) -> None:
    context, port = other
    # Processes behind one address share a public URL (the tokens' issuer); these two each have their own.
    token = await partner_token(context, served.tenant.company_id, ["charge-points:write"])
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=10
    ) as api:
        reset = await api.post("/charge-points/CS-1/reset", json={"type": "Hard"})
    assert (reset.status_code, reset.json()) == (200, {"status": "Accepted"})
    assert station.received_calls == [("Reset", {"type": "Hard"})]


async def test_a_station_silent_behind_another_process_is_did_not_answer(
    other: tuple[AppContext, int], station: SimulatedStation
) -> None:
    context, _ = other
    assert context.edge is not None

    async def never(_: object) -> dict[str, str]:
        await asyncio.Event().wait()  # the station stays silent until the connection goes away
        return {}

    station.answers["Reset"] = never
    with pytest.raises(StationDidNotAnswer):
        await context.edge.command("CS-1", "Reset", {"type": "Soft"})
    assert [action for action, _ in station.received_calls] == ["Reset"]


async def test_a_station_no_process_holds_is_not_connected_and_the_command_never_sent(
    served: Served, other: tuple[AppContext, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    context, _ = other
    assert context.edge is not None
    # The presence says connected (the process that held it died without a word), but nobody claims it.
    async with context.store.transaction() as session:
        await session.merge(StationPresence(station_id="CS-1", connected=True, last_seen_at=context.clock.now()))
    monkeypatch.setattr(relay, "CLAIM_WINDOW", timedelta(milliseconds=300))
    with pytest.raises(StationNotConnected):
        await context.edge.command("CS-1", "Reset", {"type": "Soft"})
    assert await _commands_left(context) == 0


async def test_a_station_never_connected_is_not_connected_at_once(other: tuple[AppContext, int]) -> None:
    context, _ = other
    assert context.edge is not None
    with pytest.raises(StationNotConnected):
        await context.edge.command("CS-1", "Reset", {"type": "Soft"})


async def test_a_callerror_behind_another_process_keeps_its_code(
    other: tuple[AppContext, int], station: SimulatedStation
) -> None:
    context, _ = other
    assert context.edge is not None

    def refuse(_: object) -> dict[str, str]:
        raise AnswerWithError("NotSupported", "no reset here")

    station.answers["Reset"] = refuse
    with pytest.raises(StationAnswerFailed) as failed:
        await context.edge.command("CS-1", "Reset", {"type": "Soft"})
    assert (failed.value.code, failed.value.description) == ("NotSupported", "no reset here")


async def test_commands_left_by_an_asker_that_died_are_purged_at_the_relays_first_round(
    served: Served, other: tuple[AppContext, int]
) -> None:
    context, _ = other
    long_ago = context.clock.now() - timedelta(hours=2)
    async with context.store.transaction() as session:
        session.add(
            StationCommand(
                id="abandoned", station_id="CS-1", action="Reset", payload="{}", state="pending", created_at=long_ago
            )
        )
    relay_worker = relay.CommandRelay(context.store, context.clock, lambda: {"CS-1"}, served.edge.command_here)
    await relay_worker.run_once()
    assert await _commands_left(context) == 0
