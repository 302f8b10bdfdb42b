"""The stations' WebSocket protocol under a real uvicorn server: when it stops reading a connection."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from websockets.asyncio.client import ClientConnection, connect

from chargenet.edge.transport import UNREAD_LIMIT, StationWebSocketProtocol
from tests.support.ports import free_port
from tests.support.processes import eventually


@dataclass
class HoldingApp:
    """An ASGI application that accepts a WebSocket and then takes no message until `release` is set."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    taken: list[str] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            return
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        await self.release.wait()
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            self.taken.append(message["text"])


@dataclass
class Served:
    app: HoldingApp
    server: uvicorn.Server
    client: ClientConnection

    @property
    def protocol(self) -> StationWebSocketProtocol:
        [protocol] = self.server.server_state.connections
        assert isinstance(protocol, StationWebSocketProtocol)
        return protocol


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    app = HoldingApp()
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, ws=StationWebSocketProtocol, log_config=None)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started)
    client = await connect(f"ws://127.0.0.1:{port}/ocpp/CS-1")
    try:
        yield Served(app, server, client)
    finally:
        app.release.set()
        await client.close()
        server.should_exit = True
        await task


async def test_one_waiting_message_does_not_stop_reading(served: Served) -> None:
    await served.client.send("one")
    await eventually(lambda: served.protocol.queue.qsize() == 1)
    assert not served.protocol.read_paused


async def test_reading_stops_once_the_limit_of_waiting_messages_is_reached(served: Served) -> None:
    for n in range(UNREAD_LIMIT - 1):
        await served.client.send(f"m{n}")
    await eventually(lambda: served.protocol.queue.qsize() == UNREAD_LIMIT - 1)
    assert not served.protocol.read_paused
    await served.client.send("last")
    await eventually(lambda: served.protocol.queue.qsize() == UNREAD_LIMIT)
    assert served.protocol.read_paused


async def test_reading_resumes_once_the_application_has_taken_every_message(served: Served) -> None:
    sent = [f"m{n}" for n in range(UNREAD_LIMIT + 3)]
    for text in sent:
        await served.client.send(text)
    await eventually(lambda: served.protocol.read_paused)
    served.app.release.set()
    await eventually(lambda: served.app.taken == sent)
    assert not served.protocol.read_paused


async def test_a_lost_connections_websocket_state_is_freed_without_the_cyclic_garbage_collector(
    served: Served,
) -> None:
    served.app.release.set()
    await served.client.send("one")
    await eventually(lambda: served.app.taken == ["one"])
    freed = weakref.ref(served.protocol.conn)
    gc.collect()
    gc.disable()  # from here on, only reference counting frees anything
    try:
        await served.client.close()
        await eventually(lambda: not served.server.server_state.connections)
        await eventually(lambda: freed() is None)  # once the connection's tasks end
    finally:
        gc.enable()
