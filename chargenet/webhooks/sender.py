"""The webhook sender: one signed, authenticated POST per attempt (I/O shell around the signing and auth cores).

Per attempt: a fresh UUID `x-request-id`, `Content-Type: application/json`, `Content-Length`, the signature
headers, the `Authorization` of the webhook's auth type. Redirects are not followed; the whole attempt (token
fetch included) has one deadline, 10 s by default; at most `max_response_bytes` of the answer are read, so a
receiver that streams an endless body cannot hold the lane (a token answer longer than that fails the
attempt). The status decides the outcome: once it is in, the body is read only for what remains of the
deadline, and a body that has not ended by then (or goes past the cap) closes its connection instead of
returning it to the pool, without turning a 2xx into a failure. The first `EXCERPT_BYTES` of the body are
kept for the delivery log (decisions.md "Delivery log"). Each webhook has its own connection pool (at most 10
connections; a lane uses one at a time); OAuth2 token requests share one pool per origin (scheme, host, port).

A cancelled attempt (the webhook was disabled) propagates `asyncio.CancelledError`; the worker maps it to the
`Cancelled` outcome. Every other failure is returned as a `Failed` outcome naming what went wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlsplit

import httpx
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from chargenet.clock import Clock
from chargenet.domain.credential_rotation import retry_with_previous
from chargenet.domain.webhook_headers import CustomHeaders, is_reserved
from chargenet.ports import SentRequest
from chargenet.webhooks.lane import Delivered, Failed, outcome_of_status
from chargenet.webhooks.outbound_auth import (
    CachedToken,
    OAuth2ClientCredentials,
    OutboundAuth,
    TokenResponseInvalid,
    parse_token_response,
    static_authorization,
    token_request,
)
from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat, SigningKey, webhook_signature_headers
from chargenet.webhooks.transport import GuardedTransport, HostUnresolvable, OutboundAddressRefused, Resolver, resolve

DEFAULT_TIMEOUT = 10.0
MAX_RESPONSE_BYTES = 64 * 1024
EXCERPT_BYTES = 1024  # what the delivery log keeps of a response body
USER_AGENT = "chargenet-webhooks/0.1"


@dataclass(frozen=True, slots=True)
class WebhookSigningKeys:
    """The private halves of the keys published under kid `sign` (decisions.md §4)."""

    ed25519: ed25519.Ed25519PrivateKey
    rsa: rsa.RSAPrivateKey
    key_id: str = "sign"

    def for_algorithm(self, algorithm: SignatureAlgorithm) -> SigningKey:
        return self.ed25519 if algorithm is SignatureAlgorithm.ED25519 else self.rsa


@dataclass(frozen=True, slots=True)
class Endpoint:
    webhook_id: str
    url: str
    auth: OutboundAuth
    algorithm: SignatureAlgorithm = SignatureAlgorithm.ED25519
    signature_format: SignatureFormat = SignatureFormat.RFC9421
    headers: CustomHeaders = ()
    """The webhook's custom headers (`domain.webhook_headers`), sent before the ones chargenet sets."""
    previous_auth: OutboundAuth | None = None
    """The credentials a rotation replaced, tried once after a 401 or 403 until `previous_until`."""
    previous_until: datetime | None = None


@dataclass(frozen=True, slots=True)
class AttemptResult:
    outcome: Delivered | Failed
    request_id: str
    started_at: datetime
    ended_at: datetime
    duration_ms: float
    status: int | None = None
    response_excerpt: str | None = None
    """The first EXCERPT_BYTES of the response body as text (None when no response came)."""

    def sent(self) -> SentRequest:
        """The attempt as the delivery log keeps it: its error None when it delivered."""
        return SentRequest(
            request_id=self.request_id,
            started_at=self.started_at,
            duration_ms=self.duration_ms,
            status=self.status,
            error=None if isinstance(self.outcome, Delivered) else self.outcome.error,
            response=self.response_excerpt,
        )


def excerpt_text(data: bytes) -> str:
    """Response bytes as text a store can hold: invalid UTF-8 and NUL characters become U+FFFD."""
    return data[:EXCERPT_BYTES].decode("utf-8", errors="replace").replace("\x00", "\ufffd")


@dataclass
class _TokenSlot:
    token: CachedToken | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass(frozen=True, slots=True)
class _Target:
    url: httpx.URL
    transport: GuardedTransport
    headers: list[tuple[str, str]]


class _AttemptFailed(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class WebhookSender:
    def __init__(
        self,
        *,
        clock: Clock,
        keys: Callable[[], WebhookSigningKeys],
        allow_private: bool,
        timeout: float = DEFAULT_TIMEOUT,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        resolver: Resolver = resolve,
    ) -> None:
        self._clock = clock
        self._keys = keys
        self._allow_private = allow_private
        self._timeout = timeout
        self._max_response_bytes = max_response_bytes
        self._resolver = resolver
        self._clients: dict[tuple[str, str, int], httpx.AsyncClient] = {}
        self._origins: dict[tuple[str, str, int], GuardedTransport] = {}  # the clients' (token requests)
        self._transports: dict[tuple[str, str], GuardedTransport] = {}  # each webhook's, by its id and URL
        self._targets: dict[tuple[str, str], _Target] = {}
        self._retired: dict[GuardedTransport, asyncio.TimerHandle] = {}  # forgotten pools, each closed by its timer
        self._closing: set[asyncio.Future[None]] = set()
        # Made now, not by the first attempt: loading the CA bundle takes tens of milliseconds of the event loop
        # (hundreds on a busy machine), which would count against that attempt's deadline.
        self._ssl_context = httpx.create_ssl_context()
        self._tokens: dict[str, _TokenSlot] = {}
        self._extensions = {"timeout": httpx.Timeout(timeout).as_dict()}

    def _client(self, url: str) -> httpx.AsyncClient:
        return self._origin(url)[0]

    def _origin(self, url: str) -> tuple[httpx.AsyncClient, GuardedTransport]:
        """The client of `url`'s origin and the transport it was made with (its connection pool)."""
        parts = urlsplit(url)
        origin = (parts.scheme, parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
        client = self._clients.get(origin)
        if client is None:
            transport = self._new_transport()
            client = httpx.AsyncClient(
                transport=transport,
                follow_redirects=False,
                timeout=httpx.Timeout(self._timeout),
                headers={"User-Agent": USER_AGENT},
                trust_env=False,
            )
            self._clients[origin] = client
            self._origins[origin] = transport
        return client, self._origins[origin]

    def _target(self, endpoint: Endpoint) -> _Target:
        """What every delivery of a webhook shares: its parsed URL, its connection pool, the client's own headers.

        Each webhook has a pool of its own, not one per origin: a lane sends one request at a time, so its webhook's
        pool holds a connection or two, where one pool shared by a hundred lanes to the same receiver made every
        request look through a hundred connections for an idle one (a fifth of a delivery's CPU), and made lanes
        queue behind a shared limit."""
        key = (endpoint.webhook_id, endpoint.url)
        target = self._targets.get(key)
        if target is None:
            client, _ = self._origin(endpoint.url)
            transport = self._transports[key] = self._new_transport()
            target = _Target(httpx.URL(endpoint.url), transport, list(client.headers.multi_items()))
            self._targets[key] = target
        return target

    def _new_transport(self) -> GuardedTransport:
        return GuardedTransport(
            allow_private=self._allow_private, resolver=self._resolver, ssl_context=self._ssl_context
        )

    async def send(self, endpoint: Endpoint, body: bytes) -> AttemptResult:
        """One attempt; never raises except `asyncio.CancelledError` when the attempt is cancelled."""
        request_id = str(uuid.uuid4())
        started_at = self._clock.now()
        began = time.perf_counter()
        status: int | None = None
        excerpt: str | None = None
        deadline = asyncio.get_running_loop().time() + self._timeout
        try:
            status, excerpt = await self._post(endpoint, body, request_id, deadline)
            outcome: Delivered | Failed = outcome_of_status(status)
        except TimeoutError:
            outcome = Failed(f"timeout after {self._timeout:g} s")
        except _AttemptFailed as exc:
            outcome = Failed(exc.reason)
        duration_ms = (time.perf_counter() - began) * 1000
        return AttemptResult(outcome, request_id, started_at, self._clock.now(), duration_ms, status, excerpt)

    async def _post(self, endpoint: Endpoint, body: bytes, request_id: str, deadline: float) -> tuple[int, str]:
        """The status and body excerpt of the POST (of the last one, after a 401 that renewed an OAuth2 token or a
        401/403 retried with the previous credentials during a rotation's overlap); raises TimeoutError when no
        status came before `deadline`, `_AttemptFailed` for any other failure."""
        status, excerpt = await self._post_as(endpoint, endpoint.auth, body, request_id, deadline, slot="")
        if endpoint.previous_auth is not None and retry_with_previous(
            status, now=self._clock.now(), overlap_until=endpoint.previous_until, has_previous=True
        ):
            status, excerpt = await self._post_as(
                endpoint, endpoint.previous_auth, body, str(uuid.uuid4()), deadline, slot="previous"
            )
        return status, excerpt

    async def _post_as(
        self, endpoint: Endpoint, auth: OutboundAuth, body: bytes, request_id: str, deadline: float, *, slot: str
    ) -> tuple[int, str]:
        """The POST authenticated with `auth` (an OAuth2 token of `slot`'s cache, renewed once on a 401)."""
        if isinstance(auth, OAuth2ClientCredentials):
            async with asyncio.timeout_at(deadline):
                authorization = await self._authorization(endpoint, auth, slot, renew=False)
        else:
            authorization = static_authorization(auth)
        status, excerpt = await self._post_once(endpoint, body, request_id, authorization, deadline)
        if status == 401 and isinstance(auth, OAuth2ClientCredentials):
            async with asyncio.timeout_at(deadline):
                authorization = await self._authorization(endpoint, auth, slot, renew=True)
            status, excerpt = await self._post_once(endpoint, body, str(uuid.uuid4()), authorization, deadline)
        return status, excerpt

    async def _post_once(
        self, endpoint: Endpoint, body: bytes, request_id: str, authorization: str | None, deadline: float
    ) -> tuple[int, str]:
        # Asked per request: a key rotation in another process swaps the files, the provider re-reads them.
        keys = self._keys()
        target = self._target(endpoint)
        # Custom headers first and never one chargenet sets (they were checked when stored; checked again here, so
        # that no stored row can ever stand in for a signed header).
        headers = [
            *((name, value) for name, value in endpoint.headers if not is_reserved(name)),
            *target.headers,
            ("Content-Type", "application/json"),
            ("x-request-id", request_id),
            *webhook_signature_headers(
                url=endpoint.url,
                request_id=request_id,
                body=body,
                created=int(self._clock.now().timestamp()),
                key=keys.for_algorithm(endpoint.algorithm),
                algorithm=endpoint.algorithm,
                signature_format=endpoint.signature_format,
                key_id=keys.key_id,
            ).items(),
        ]
        if authorization:
            headers.append(("Authorization", authorization))
        # Straight to the webhook's transport: what the client would add on the way (its headers, the timeout) is
        # added here; what it would do besides (redirects, authentication flows, cookies) a delivery never wants.
        request = httpx.Request("POST", target.url, content=body, headers=headers, extensions=self._extensions)
        try:
            async with asyncio.timeout_at(deadline):
                response = await target.transport.handle_async_request(request)
        except OutboundAddressRefused as exc:
            raise _AttemptFailed(f"address refused: {exc.message}") from None
        except HostUnresolvable as exc:
            raise _AttemptFailed(exc.message) from None
        except httpx.TimeoutException:
            raise TimeoutError from None
        except httpx.HTTPError as exc:
            raise _AttemptFailed(_describe(exc)) from None
        response.request = request
        # The status is in and decides the outcome; the body is read only so that the connection can go back
        # to the pool. Its own deadline is kept apart from the one above, so running out of time here is no
        # failure: closing a response whose body has not ended closes its connection (httpcore never pools it).
        kept = bytearray()
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(deadline):
                    await self._drain(response, kept)
        finally:
            await response.aclose()
        return response.status_code, excerpt_text(bytes(kept))

    async def _drain(self, response: httpx.Response, kept: bytearray) -> None:
        """Read the body up to `max_response_bytes`, keeping its first EXCERPT_BYTES in `kept` (as sent: a
        compressed body is kept compressed, the log shows what came over the wire)."""
        received = 0
        try:
            async for chunk in response.aiter_raw():
                if len(kept) < EXCERPT_BYTES:
                    kept += chunk[: EXCERPT_BYTES - len(kept)]
                received += len(chunk)
                if received > self._max_response_bytes:
                    break
        except httpx.HTTPError:
            return

    async def _read_capped(self, response: httpx.Response) -> bytes | None:
        """The whole body, or None when it goes past `max_response_bytes` (the rest is not read)."""
        content = bytearray()
        async for chunk in response.aiter_bytes():
            content += chunk
            if len(content) > self._max_response_bytes:
                return None
        return bytes(content)

    async def _authorization(
        self, endpoint: Endpoint, auth: OutboundAuth, slot_name: str, *, renew: bool
    ) -> str | None:
        if not isinstance(auth, OAuth2ClientCredentials):
            return static_authorization(auth)
        # The previous credentials of a rotation have a token of their own.
        slot = self._tokens.setdefault(endpoint.webhook_id + slot_name, _TokenSlot())
        async with slot.lock:
            if renew or slot.token is None or not slot.token.usable(self._clock.now()):
                slot.token = None
                slot.token = await self._fetch_token(auth)
            return f"Bearer {slot.token.access_token}"

    async def _fetch_token(self, auth: OAuth2ClientCredentials) -> CachedToken:
        request = token_request(auth)
        client = self._client(request.url)
        try:
            async with client.stream("POST", request.url, data=request.form, headers=request.headers) as response:
                status, content = response.status_code, await self._read_capped(response)
        except OutboundAddressRefused as exc:
            raise _AttemptFailed(f"token URL address refused: {exc.message}") from None
        except HostUnresolvable as exc:
            raise _AttemptFailed(f"token URL: {exc.message}") from None
        except httpx.TimeoutException:
            raise TimeoutError from None
        except httpx.HTTPError as exc:
            raise _AttemptFailed(f"token endpoint: {_describe(exc)}") from None
        if content is None:
            raise _AttemptFailed(f"token endpoint answer too large (over {self._max_response_bytes} bytes)")
        try:
            document = json.loads(content)
        except ValueError:
            document = None
        try:
            return parse_token_response(status, document, self._clock.now())
        except TokenResponseInvalid as exc:
            raise _AttemptFailed(exc.detail) from None

    def forget(self, webhook_id: str) -> None:
        """Drop what is kept for a webhook whose settings changed, or that is gone: its OAuth2 token and its connection
        pools. A pool is closed once no attempt can be using it any more (after an attempt's deadline): another lane
        of the webhook may be sending through it right now."""
        self._tokens.pop(webhook_id, None)
        self._tokens.pop(webhook_id + "previous", None)
        for key in [key for key in self._transports if key[0] == webhook_id]:
            self._targets.pop(key, None)
            transport = self._transports.pop(key)
            self._retired[transport] = asyncio.get_running_loop().call_later(
                self._timeout, self._close_retired, transport
            )

    def _close_retired(self, transport: GuardedTransport) -> None:
        if self._retired.pop(transport, None) is not None:
            closing = asyncio.ensure_future(transport.aclose())
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        clients, self._clients = self._clients, {}
        transports = [*self._transports.values(), *self._retired]
        for timer in self._retired.values():
            timer.cancel()
        self._transports, self._retired, self._origins, self._targets = {}, {}, {}, {}
        try:
            for client in clients.values():
                await client.aclose()
        finally:
            for transport in transports:
                with contextlib.suppress(Exception):
                    await transport.aclose()
            await asyncio.gather(*self._closing, return_exceptions=True)


def _describe(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.ConnectError):
        return f"connection failed: {exc}" if str(exc) else "connection failed"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"connection broken: {exc}" if str(exc) else "connection broken"
    if isinstance(exc, httpx.ReadError | httpx.WriteError):
        return f"connection reset: {exc}" if str(exc) else "connection reset"
    return f"{type(exc).__name__}: {exc}"
