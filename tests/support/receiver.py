"""A real HTTP/1.1 receiver on loopback for webhook tests, built on asyncio streams so that each test can
choose how it misbehaves: any status, a redirect, a delay, a reset connection, a slow or endless body."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    names: tuple[str, ...] = ()
    """Every header name as it came, lower-cased, repeats included (`headers` keeps the last of each)."""


@dataclass
class Reply:
    status: int = 204
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    reset: bool = False
    drip: bytes | None = None
    """Send these bytes one per 50 ms after the headers (a slow or endless body), announcing a longer length."""


Behaviour = Callable[[Received], Awaitable[Reply] | Reply]


@dataclass
class Receiver:
    url: str
    port: int
    behaviour: Behaviour
    received: list[Received] = field(default_factory=list)
    connections: int = 0
    open_connections: set[asyncio.StreamWriter] = field(default_factory=set)

    def bodies(self) -> list[bytes]:
        return [r.body for r in self.received]


async def _read_request(reader: asyncio.StreamReader) -> Received | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    names: list[str] = []
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
            names.append(name.strip().lower())
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return Received(method, path, headers, body, tuple(names))


@asynccontextmanager
async def run_receiver(
    behaviour: Behaviour | None = None, path: str = "/hook", port: int = 0
) -> AsyncIterator[Receiver]:
    """A receiver on a free loopback port, or on `port` (a receiver started again where a stopped one was)."""
    state = Receiver(url="", port=0, behaviour=behaviour or (lambda _r: Reply()))

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.connections += 1
        state.open_connections.add(writer)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                state.received.append(request)
                reply = state.behaviour(request)
                if not isinstance(reply, Reply):
                    reply = await reply
                if reply.delay:
                    await asyncio.sleep(reply.delay)
                if reply.reset:
                    # SO_LINGER 0 turns the close into a TCP reset.
                    sock = writer.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    writer.transport.abort()
                    return
                announced = len(reply.body) + (len(reply.drip) + 1000 if reply.drip is not None else 0)
                head = [f"HTTP/1.1 {reply.status} X", f"Content-Length: {announced}"]
                head += [f"{k}: {v}" for k, v in reply.headers.items()]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + reply.body)
                await writer.drain()
                if reply.drip is not None:
                    for byte in reply.drip:
                        writer.write(bytes([byte]))
                        await writer.drain()
                        await asyncio.sleep(0.05)
                    writer.close()
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:
            # The test's loop is closing with a reply still pending (a slow receiver). Ending the task normally
            # keeps Python 3.11's stream callback from logging the cancellation as an error with a traceback.
            return
        finally:
            state.open_connections.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    state.port = server.sockets[0].getsockname()[1]
    state.url = f"http://127.0.0.1:{state.port}{path}"
    try:
        yield state
    finally:
        server.close()
        # A stopped receiver is gone for its clients too: the connections they keep alive are closed with it.
        for writer in list(state.open_connections):
            with contextlib.suppress(Exception):
                writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 1)
