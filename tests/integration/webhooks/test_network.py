"""The webhooks' network backend under httpcore's connection pool, against real sockets on loopback."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpcore
import pytest

from chargenet.webhooks.network import HIGH_WATER, AsyncioBackend
from tests.support.deploy import self_signed
from tests.support.processes import eventually

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
NO_CONTENT = b"HTTP/1.1 204 No Content\r\n\r\n"


class Server:
    def __init__(self) -> None:
        self.port = 0
        self.connections = 0


@asynccontextmanager
async def serving(handler: Handler, tls: ssl.SSLContext | None = None) -> AsyncIterator[Server]:
    server = Server()
    handlers: set[asyncio.Task[None]] = set()

    async def counted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.connections += 1
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    listening = await asyncio.start_server(counted, "127.0.0.1", 0, ssl=tls)
    server.port = listening.sockets[0].getsockname()[1]
    async with listening:
        try:
            yield server
        finally:
            for task in handlers:
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)


async def answer_each(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, reply: bytes = NO_CONTENT) -> None:
    while True:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(reply)
        await writer.drain()


def pool(ssl_context: ssl.SSLContext | None = None) -> httpcore.AsyncConnectionPool:
    return httpcore.AsyncConnectionPool(network_backend=AsyncioBackend(), ssl_context=ssl_context)


async def test_requests_to_one_origin_share_a_pooled_connection() -> None:
    async with serving(answer_each) as server, pool() as http:
        for _ in range(3):
            response = await http.request("POST", f"http://127.0.0.1:{server.port}/hook", content=b"{}")
            assert response.status == 204
    assert server.connections == 1


async def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        await writer.drain()

    async with serving(once) as server, pool() as http:
        assert (await http.request("GET", f"http://127.0.0.1:{server.port}/")).status == 204
        # The server's close reached the idle connection (the pool may have dropped it already).
        await eventually(lambda: all(connection.has_expired() for connection in http.connections))
        assert (await http.request("GET", f"http://127.0.0.1:{server.port}/")).status == 204
    assert server.connections == 2


async def test_a_body_larger_than_the_high_water_mark_arrives_whole() -> None:
    body = bytes(range(256)) * (4 * HIGH_WATER // 256)

    async def large(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()

    async with serving(large) as server, pool() as http:
        response = await http.request("GET", f"http://127.0.0.1:{server.port}/")
    assert response.content == body


async def test_what_arrives_unread_is_held_near_the_high_water_mark_until_read() -> None:
    flood = b"z" * (16 * HIGH_WATER)

    async def flooding(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(flood)
        await writer.drain()
        await reader.read()

    async with serving(flooding) as server:
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", server.port)
        connection = stream._connection  # type: ignore[attr-defined]  # the protocol, with what it buffered unread
        await eventually(lambda: not connection.transport.is_reading())  # it stopped reading: the rest waits
        held = len(connection.buffer)
        received = bytearray()
        while len(received) < len(flood):
            received += await stream.read(65536, timeout=5)
        await stream.aclose()
    assert HIGH_WATER <= held <= 2 * HIGH_WATER
    assert bytes(received) == flood


async def test_a_request_body_larger_than_the_socket_buffers_is_sent_whole() -> None:
    body = b"x" * (8 * 1024 * 1024)
    received: list[int] = []

    async def slow_reader(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        await asyncio.sleep(0.05)  # the client's transport fills and pauses meanwhile
        received.append(len(await reader.readexactly(length)))
        writer.write(NO_CONTENT)
        await writer.drain()

    async with serving(slow_reader) as server, pool() as http:
        response = await http.request("POST", f"http://127.0.0.1:{server.port}/", content=body)
    assert response.status == 204
    assert received == [len(body)]


async def test_https_verifies_the_certificate_and_speaks_tls(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    trusting = ssl.create_default_context(cafile=str(cert))
    async with serving(answer_each, tls=served) as server, pool(trusting) as http:
        response = await http.request("POST", f"https://127.0.0.1:{server.port}/hook", content=b"{}")
        again = await http.request("POST", f"https://127.0.0.1:{server.port}/hook", content=b"{}")
    assert (response.status, again.status, server.connections) == (204, 204, 1)


async def test_an_untrusted_certificate_is_a_connect_error(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    async with serving(answer_each, tls=served) as server, pool(ssl.create_default_context()) as http:
        with pytest.raises(httpcore.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await http.request("GET", f"https://127.0.0.1:{server.port}/")


async def test_a_refused_connection_is_a_connect_error() -> None:
    async with serving(answer_each) as server:
        port = server.port
    async with pool() as http:
        with pytest.raises(httpcore.ConnectError):
            await http.request("GET", f"http://127.0.0.1:{port}/")


async def test_no_answer_within_the_read_timeout_is_a_read_timeout() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await asyncio.Event().wait()  # never answers; cancelled when the test's server stops

    async with serving(silent) as server, pool() as http:
        with pytest.raises(httpcore.ReadTimeout):
            await http.request("GET", f"http://127.0.0.1:{server.port}/", extensions={"timeout": {"read": 0.05}})


async def test_a_connection_reset_mid_answer_is_a_read_error() -> None:
    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
        await writer.drain()
        await asyncio.sleep(0.05)  # the client has read what came
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
        writer.transport.abort()

    async with serving(reset) as server, pool() as http:
        with pytest.raises(httpcore.ReadError):
            await http.request("GET", f"http://127.0.0.1:{server.port}/")


async def test_a_body_the_peer_does_not_read_within_the_write_timeout_is_a_write_timeout() -> None:
    async with serving(never_reading) as server:
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", server.port)
        with pytest.raises(httpcore.WriteTimeout):
            await stream.write(b"x" * (32 * 1024 * 1024), timeout=0.05)
        await stream.aclose()


async def test_closing_a_connection_whose_peer_stopped_reading_releases_its_socket_at_once() -> None:
    async with serving(never_reading) as server:
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", server.port)
        sock = stream.get_extra_info("socket")
        with pytest.raises(httpcore.WriteTimeout):
            await stream.write(b"x" * (32 * 1024 * 1024), timeout=0.05)
        await stream.aclose()  # megabytes still unsent: a graceful close alone would wait for them for ever
        await asyncio.sleep(0.01)
        assert sock.fileno() == -1


async def test_a_write_woken_by_the_end_of_the_connection_is_a_write_error() -> None:
    async def reset_later(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(0.1)  # the client's buffer fills and its write waits
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    async with serving(reset_later) as server:
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", server.port)
        with pytest.raises(httpcore.WriteError):
            await stream.write(b"x" * (32 * 1024 * 1024), timeout=5)
        await stream.aclose()


async def never_reading(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await asyncio.Event().wait()  # cancelled when the test's server stops


async def test_unix_sockets_are_refused() -> None:
    with pytest.raises(httpcore.ConnectError):
        await AsyncioBackend().connect_unix_socket("/tmp/chargenet.sock")
