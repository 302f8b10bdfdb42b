"""An httpx transport that checks the target address after DNS resolution, at connect time.

httpcore hands the host name to its network backend when it opens a connection; this backend resolves the
name itself, applies `addresses.check_address` to every address it resolves to, and connects to the checked
address. Checking the resolved address at connect time (not the name, not once at configuration) is what
defeats DNS rebinding. TLS still verifies the certificate against the host name: httpcore starts TLS with the
origin's host as `server_hostname`, whatever address the socket went to. Below the check the sockets are
asyncio's own (`network.AsyncioBackend`), not anyio's.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable

import httpcore
import httpx

from chargenet.errors import ChargenetError
from chargenet.webhooks.addresses import check_address
from chargenet.webhooks.network import AsyncioBackend

Resolver = Callable[[str, int], Awaitable[list[str]]]


class OutboundAddressRefused(ChargenetError):
    """A webhook target resolved to an address the operator does not allow."""

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"{host}: {reason}")
        self.host = host
        self.reason = reason


class HostUnresolvable(ChargenetError):
    def __init__(self, host: str, detail: str) -> None:
        super().__init__(f"{host} does not resolve ({detail})")
        self.host = host


async def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to for TCP, in resolver order, without duplicates."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise HostUnresolvable(host, exc.strerror or str(exc)) from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def checked_addresses(host: str, port: int, *, allow_private: bool, resolver: Resolver = resolve) -> list[str]:
    """The addresses of `host`, all of them allowed; raises OutboundAddressRefused if any one is not.

    A name that resolves to a public and a private address at once is refused as a whole: a partner endpoint
    has no reason to, and an attacker's name would.
    """
    addresses = await resolver(host, port)
    if not addresses:
        raise HostUnresolvable(host, "no addresses")
    for address in addresses:
        decision = check_address(address.split("%", 1)[0], allow_private=allow_private)
        if not decision.allowed:
            raise OutboundAddressRefused(host, decision.reason)
    return addresses


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, *, allow_private: bool, resolver: Resolver) -> None:
        self._allow_private = allow_private
        self._resolver = resolver
        self._inner = AsyncioBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's backend interface
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await checked_addresses(host, port, allow_private=self._allow_private, resolver=self._resolver)
        last_error: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None
        raise last_error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's backend interface
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise OutboundAddressRefused(path, "unix sockets are not webhook targets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncBaseTransport):
    """A pooled HTTP/1.1 transport whose every new connection passes the outbound address policy."""

    def __init__(
        self,
        *,
        allow_private: bool,
        resolver: Resolver = resolve,
        max_connections: int = 10,
        keepalive_expiry: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        # Loading the CA bundle into a context takes tens of milliseconds: callers share one across endpoints.
        ssl_context = ssl_context or httpx.create_ssl_context()
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=keepalive_expiry,
            network_backend=_GuardedBackend(allow_private=allow_private, resolver=resolver),
        )
        # httpx's own transport maps httpcore's exceptions to httpx's; reuse it around our pool.
        self._wrapper = httpx.AsyncHTTPTransport(verify=ssl_context, trust_env=False)
        self._wrapper._pool = self._pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._wrapper.handle_async_request(request)

    async def aclose(self) -> None:
        await self._pool.aclose()
