"""A simulated upstream central system (a CPO's CSMS) for OCPP 1.6J: a real WebSocket server.

It mints its own transaction ids (from 90001, so they never look like the edge's), records every CALL it gets
per station, can be told to answer slowly (or to hold answers until released), to refuse actions with a
CALLERROR, or to go away and come back, and can send CALLs (RemoteStopTransaction, ...) to a station through
the edge.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
import ssl
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

Payload = dict[str, Any]
log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class SimulatedCentralSystem:
    host: str = "127.0.0.1"
    port: int = 0
    passwords: dict[str, str] = field(default_factory=dict)  # station id -> key; stations not listed need none
    tags: dict[str, str] = field(default_factory=dict)  # idTag -> status; unknown tags are Accepted
    delay: float = 0.0  # seconds before every answer
    heartbeat_interval: int = 300  # the interval its BootNotification answers give
    refuse: set[str] = field(default_factory=set)  # actions answered with CALLERROR InternalError
    silent: set[str] = field(default_factory=set)  # actions never answered
    hold: set[str] = field(default_factory=set)  # actions answered only once `release`d
    calls: dict[str, list[tuple[str, Payload]]] = field(default_factory=dict)
    next_transaction_id: itertools.count[int] = field(default_factory=lambda: itertools.count(90001))
    connections: dict[str, ServerConnection] = field(default_factory=dict)
    tls: ssl.SSLContext | None = None  # a server context: wss://, with the client certificates it asks for
    _server: Server | None = None
    _pending: dict[str, asyncio.Future[Any]] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _released: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        return f"{'wss' if self.tls is not None else 'ws'}://{self.host}:{self.port}/ocpp"

    async def start(self) -> None:
        self._server = await serve(
            self._handle,
            self.host,
            self.port,
            subprotocols=[Subprotocol("ocpp1.6")],
            process_request=self._check_request,
            ssl=self.tls,
        )
        self.port = next(iter(self._server.sockets)).getsockname()[1]

    async def stop(self) -> None:
        """Go away: close every connection and stop listening (the port stays the same for `start`)."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        self.connections.clear()

    def received(self, station_id: str, action: str | None = None) -> list[Payload]:
        return [p for a, p in self.calls.get(station_id, []) if action is None or a == action]

    async def wait_for(self, station_id: str, action: str, count: int = 1, within: float = 10) -> list[Payload]:
        """Wait until `station_id` has sent `count` CALLs of `action`."""
        async with asyncio.timeout(within):
            while len(self.received(station_id, action)) < count:
                await self._next_change()
        return self.received(station_id, action)

    async def wait_connected(self, station_id: str, within: float = 10) -> None:
        async with asyncio.timeout(within):
            while station_id not in self.connections:
                await self._next_change()

    async def _next_change(self) -> None:
        self._changed.clear()
        await self._changed.wait()

    def release(self, action: str) -> None:
        """Answer the held CALLs of `action` now, and the later ones at once."""
        self.hold.discard(action)
        released, self._released = self._released, asyncio.Event()
        released.set()

    def _check_request(self, connection: ServerConnection, request: Request) -> Response | None:
        station_id = request.path.rstrip("/").rsplit("/", 1)[-1]
        expected = self.passwords.get(station_id)
        if expected is None:
            return None
        wanted = "Basic " + base64.b64encode(f"{station_id}:{expected}".encode()).decode()
        if request.headers.get("Authorization") != wanted:
            return connection.respond(HTTPStatus.UNAUTHORIZED, "unauthorized\n")
        return None

    async def _handle(self, connection: ServerConnection) -> None:
        assert connection.request is not None
        station_id = connection.request.path.rstrip("/").rsplit("/", 1)[-1]
        self.connections[station_id] = connection
        self._changed.set()
        try:
            async for message in connection:
                frame = json.loads(message)
                if frame[0] == 2:
                    task = asyncio.create_task(self._answer(connection, station_id, frame[1], frame[2], frame[3]))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                else:
                    future = self._pending.pop(frame[1], None)
                    if future is not None and not future.done():
                        future.set_result(frame)
        except Exception:
            log.debug("upstream simulator connection ended", exc_info=True)
        finally:
            if self.connections.get(station_id) is connection:
                del self.connections[station_id]

    async def _answer(
        self, connection: ServerConnection, station_id: str, unique_id: str, action: str, payload: Payload
    ) -> None:
        self.calls.setdefault(station_id, []).append((action, payload))
        self._changed.set()
        if action in self.silent:
            return
        while action in self.hold:
            await self._released.wait()
        if self.delay:
            await asyncio.sleep(self.delay)
        if action in self.refuse:
            answer: list[Any] = [4, unique_id, "InternalError", "refused by the simulator", {}]
        else:
            answer = [3, unique_id, self._result(action, payload)]
        with contextlib.suppress(Exception):
            await connection.send(json.dumps(answer))

    def _result(self, action: str, payload: Payload) -> Payload:
        if action == "BootNotification":
            return {"status": "Accepted", "currentTime": _now(), "interval": self.heartbeat_interval}
        if action == "Heartbeat":
            return {"currentTime": _now()}
        if action == "Authorize":
            return {"idTagInfo": {"status": self.tags.get(payload["idTag"], "Accepted")}}
        if action == "StartTransaction":
            status = self.tags.get(payload["idTag"], "Accepted")
            return {"transactionId": next(self.next_transaction_id), "idTagInfo": {"status": status}}
        if action == "DataTransfer":
            return {"status": "Accepted", "data": "from-upstream"}
        return {}

    async def call(self, station_id: str, action: str, payload: Payload, within: float = 10) -> list[Any]:
        """Send a CALL to a station (through the edge); returns the whole answer frame."""
        connection = self.connections[station_id]
        unique_id = f"cpo-{next(self._ids)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[unique_id] = future
        await connection.send(json.dumps([2, unique_id, action, payload]))
        result: list[Any] = await asyncio.wait_for(future, within)
        return result


def main(argv: list[str] | None = None) -> None:
    """`python -m chargenet.simulators.cpo --port 9000`: run the simulated central system until interrupted."""
    import argparse

    parser = argparse.ArgumentParser(description="a simulated upstream OCPP 1.6J central system")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    args = parser.parse_args(argv)

    async def run() -> None:
        central = SimulatedCentralSystem(host=args.host, port=args.port)
        await central.start()
        print(f"upstream central system at {central.url}", flush=True)
        await asyncio.Future()

    asyncio.run(run())


if __name__ == "__main__":
    main()
