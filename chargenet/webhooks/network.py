"""The network under the webhooks' connection pools: httpcore's backend interface on asyncio's own transports.

httpcore's default backend goes through anyio, which wraps every socket operation in a cancel scope with a timer,
an exception-mapping context manager and a checkpoint. A delivery reads and writes a few times, and under cProfile
that wrapping was a tenth of a delivery's CPU on the one event loop, on which one lane's pace depends (the pools'
locks stay anyio's: httpcore's, not the backend's). This backend reads from a buffer its protocol fills and writes
straight to the transport, waiting only when there is nothing to read or the transport asks for a pause; it keeps
httpcore's contract: its exception types, `is_readable` for a pooled connection the server closed, TLS by
`loop.start_tls`. The same approach is what httpx's successor adds upstream.

Per-operation timeouts are honoured when httpcore passes one; the sender's deadline for the whole attempt is
enforced above this layer anyway.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore

# Reading pauses while this much arrived unread (a receiver streaming a body larger than the sender keeps), and
# resumes once a quarter of it is left.
HIGH_WATER = 256 * 1024


class _Connection(asyncio.Protocol):
    """What arrived on one connection and what the reader waits for."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.ended = False
        self.error: Exception | None = None
        self._arrival: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._reading_paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > HIGH_WATER and not self._reading_paused and self.transport is not None:
            self.transport.pause_reading()
            self._reading_paused = True
        self._wake(self._arrival)

    def eof_received(self) -> bool:
        self.ended = True
        self._wake(self._arrival)
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        self._wake(self._arrival)
        self._wake(self._writable)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        self._wake(self._writable)
        self._writable = None

    @property
    def readable(self) -> bool:
        """Something to read, or the end: for an idle pooled connection, that the server closed it."""
        return bool(self.buffer) or self.ended

    async def arrival(self) -> None:
        """Wait until there is something to read, or the end."""
        while not self.buffer and not self.ended:
            self._arrival = asyncio.get_running_loop().create_future()
            try:
                await self._arrival
            finally:
                self._arrival = None

    def take(self, max_bytes: int) -> bytes:
        """Up to `max_bytes` of what arrived; b"" at the end; the error the connection ended with, once drained."""
        if not self.buffer and self.error is not None:
            raise self.error
        data = bytes(self.buffer[:max_bytes])
        del self.buffer[:max_bytes]
        if self._reading_paused and len(self.buffer) <= HIGH_WATER // 4 and self.transport is not None:
            self.transport.resume_reading()
            self._reading_paused = False
        return data

    @property
    def write_paused(self) -> asyncio.Future[None] | None:
        """While the transport's buffer is full, what resolves when it drained (or the connection ended)."""
        return self._writable

    @staticmethod
    def _wake(waiter: asyncio.Future[None] | None) -> None:
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, transport: asyncio.Transport, connection: _Connection) -> None:
        self._transport = transport
        self._connection = connection

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109 - httpcore's interface
        connection = self._connection
        if not connection.readable:
            try:
                async with asyncio.timeout(timeout):
                    await connection.arrival()  # a future only this connection resolves: a timeout here is ours
            except TimeoutError:
                raise httpcore.ReadTimeout(f"nothing read within {timeout} s") from None
        try:
            return connection.take(max_bytes)
        except Exception as exc:  # the error the connection ended with (a reset, a timeout of the kernel's own)
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109 - httpcore's interface
        if not buffer:
            return
        if self._transport.is_closing() or self._connection.ended:
            raise httpcore.WriteError("the connection is closed")
        try:
            self._transport.write(buffer)
        except Exception as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc
        paused = self._connection.write_paused
        if paused is None:
            return
        try:
            async with asyncio.timeout(timeout):
                await paused
        except TimeoutError:
            raise httpcore.WriteTimeout(f"not written within {timeout} s") from None
        if self._connection.ended:  # woken by the end of the connection, not by its buffer draining
            raise httpcore.WriteError(str(self._connection.error or "the connection closed while writing"))

    async def aclose(self) -> None:
        # As anyio does: a graceful close first, then whatever is left is dropped. A close alone would wait for
        # the unsent buffer to drain with no limit (a receiver that stopped reading), or, on TLS, up to 30 s
        # for the peer's close_notify; a timed-out delivery to a stuck receiver would leave its socket behind.
        self._transport.close()
        await asyncio.sleep(0)
        self._transport.abort()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport = await loop.start_tls(
                    self._transport, self._connection, ssl_context, server_hostname=server_hostname
                )
        except TimeoutError:
            self._transport.close()
            raise httpcore.ConnectTimeout(f"no TLS handshake within {timeout} s") from None
        except (OSError, ssl.SSLError) as exc:
            self._transport.close()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        assert isinstance(transport, asyncio.Transport)
        self._connection.transport = transport
        return AsyncioStream(transport, self._connection)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return self._connection.readable
        names = {"ssl_object": "ssl_object", "client_addr": "sockname", "server_addr": "peername", "socket": "socket"}
        return self._transport.get_extra_info(names[info]) if info in names else None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        connection = _Connection()
        try:
            async with asyncio.timeout(timeout):
                transport, _ = await loop.create_connection(
                    lambda: connection, host, port, local_addr=(local_address, 0) if local_address else None
                )
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"no connection within {timeout} s") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        sock = transport.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
        return AsyncioStream(transport, connection)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not supported")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
