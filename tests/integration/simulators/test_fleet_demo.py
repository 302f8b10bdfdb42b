"""The demo fleet's rounds against a server on loopback that closes each station's connection at its first CALL:
a round ended by the server stopping (1012, as uvicorn closes the stations' sockets on shutdown) is no failure; a
round ended otherwise is logged as one."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import cast

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.frames import CloseCode
from websockets.typing import Subprotocol

from chargenet.app import AppContext
from chargenet.simulators import fleet_demo
from chargenet.simulators.fleet_demo import DemoFleet

FAILED = "demo fleet round failed"


async def _rounds_closed_with(code: CloseCode | None, rounds: int, caplog: pytest.LogCaptureFixture) -> list[str]:
    """Run the fleet until the server has closed `rounds` rounds with `code` (None: dropped without a close frame,
    as when its process ends); the failures it logged."""
    opened = 0
    stopping = asyncio.Event()

    async def close_at_first_call(connection: ServerConnection) -> None:
        nonlocal opened
        await connection.recv()  # the station's BootNotification
        opened += 1
        if opened > rounds:
            # A round begins only once the fleet has dealt with the end of the one before: the rounds counted are
            # all decided, and this one ends with the fleet stopping.
            stopping.set()
        if code is None:
            connection.transport.abort()
        else:
            await connection.close(code)

    subprotocols = [Subprotocol("ocpp1.6"), Subprotocol("ocpp2.0.1")]
    async with serve(close_at_first_call, "127.0.0.1", 0, subprotocols=subprotocols) as server:
        port = server.sockets[0].getsockname()[1]
        # The fleet reads only the port it serves on from the application's context.
        fleet = DemoFleet(cast(AppContext, SimpleNamespace(settings=SimpleNamespace(port=port))), "site")
        with caplog.at_level(logging.ERROR, logger=fleet_demo.log.name):
            await asyncio.wait_for(fleet.run(stopping), 60)
    return [record.getMessage() for record in caplog.records if record.getMessage() == FAILED]


@pytest.fixture(autouse=True)
def _short_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fleet_demo, "PAUSE_BETWEEN_TURNS_S", 0.05)


async def test_a_round_the_server_ends_by_stopping_is_no_failure(caplog: pytest.LogCaptureFixture) -> None:
    assert await _rounds_closed_with(CloseCode.SERVICE_RESTART, 2, caplog) == []


@pytest.mark.expected_traceback("StationConnectionLost: connection closed (1011)")
async def test_a_round_the_server_ends_otherwise_is_logged_as_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    assert await _rounds_closed_with(CloseCode.INTERNAL_ERROR, 2, caplog) == [FAILED, FAILED]


async def test_a_round_the_server_ends_by_dropping_the_connection_is_no_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert await _rounds_closed_with(None, 2, caplog) == []
