"""An application's registered public keys for private_key_jwt: its JWKS document, or its JWKS URL.

A document is parsed once per content. A URL is fetched through the webhooks' guarded transport (the resolved
address is checked at connect time, so a name that turns private later is still refused: decisions.md §4,
"Private webhook targets"), with no redirects, a short timeout and a size bound, and kept JWKS_URL_TTL seconds;
a client that rotated its keys is read again at most every REFETCH_AFTER seconds when no cached key verifies.
Fetching happens while a client authenticates, never inside a unit of work of the store.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import httpx
from joserfc.jwk import KeySet

from chargenet.auth.client_assertions import MAX_KEY_SET_SIZE, public_key_set
from chargenet.auth.errors import InvalidClientAssertion
from chargenet.auth.principals import Principal
from chargenet.clock import Clock
from chargenet.errors import ChargenetError
from chargenet.webhooks.transport import GuardedTransport

JWKS_URL_TTL = timedelta(minutes=5)
REFETCH_AFTER = timedelta(seconds=10)
FETCH_TIMEOUT = 5.0
MAX_CACHED = 1000


class ClientKeys:
    def __init__(self, *, clock: Clock, allow_private: bool, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._clock = clock
        self._allow_private = allow_private
        self._transport = transport
        # Made on the first fetch: loading the CA bundle costs tens of milliseconds, which a process whose
        # clients register no URL never needs to spend.
        self._http: httpx.AsyncClient | None = None
        self._documents: dict[str, KeySet] = {}
        self._fetched: dict[str, tuple[datetime, KeySet]] = {}

    async def key_set(self, principal: Principal, *, again: bool = False) -> KeySet:
        """The application's keys; with `again`, a URL's keys read anew unless they were read just now.
        Raises InvalidClientAssertion when the application has none or they cannot be had."""
        if principal.jwks is not None:
            key_set = self._documents.get(principal.jwks)
            if key_set is None:
                key_set = public_key_set(principal.jwks)
                if len(self._documents) >= MAX_CACHED:
                    self._documents.clear()
                self._documents[principal.jwks] = key_set
            return key_set
        if principal.jwks_url is None:
            raise InvalidClientAssertion("the application has no public keys registered")
        now = self._clock.now()
        cached = self._fetched.get(principal.jwks_url)
        if cached is not None:
            age = now - cached[0]
            if age < JWKS_URL_TTL and not (again and age >= REFETCH_AFTER):
                return cached[1]
        key_set = await self._fetch(principal.jwks_url)
        if len(self._fetched) >= MAX_CACHED:
            self._fetched.clear()
        self._fetched[principal.jwks_url] = (now, key_set)
        return key_set

    async def _fetch(self, url: str) -> KeySet:
        if self._http is None:
            transport = self._transport or GuardedTransport(allow_private=self._allow_private, max_connections=4)
            self._http = httpx.AsyncClient(
                transport=transport, timeout=FETCH_TIMEOUT, follow_redirects=False, trust_env=False
            )
        try:
            async with self._http.stream("GET", url, headers={"Accept": "application/json"}) as response:
                if response.status_code != 200:
                    raise InvalidClientAssertion(f"the key set URL answered {response.status_code}")
                body = b""
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_KEY_SET_SIZE:
                        raise InvalidClientAssertion("the key set URL answered more than 64 KiB")
        except (httpx.HTTPError, ChargenetError) as exc:
            if isinstance(exc, InvalidClientAssertion):
                raise
            raise InvalidClientAssertion(f"the key set URL could not be read ({exc})") from None
        try:
            return public_key_set(body.decode("utf-8"))
        except UnicodeDecodeError:
            raise InvalidClientAssertion("the key set URL answered text that is not UTF-8") from None

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
