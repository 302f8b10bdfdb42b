"""OAuth 2.0 client credentials token clients (RFC 6749 §4.4), synchronous and asynchronous.

A client keeps the last token and hands it out until shortly before it expires; then the next caller
renews it. However many callers ask at once, at most one token request is in flight: the others wait for
it and share its result. Time is read from a monotonic clock that tests may replace.

A client authenticates with its secret (`basic` or `post`) or, without any shared secret, with a signed
assertion (`private_key_jwt`, RFC 7523: pass a `PrivateKeyJwt`). The same authentication serves `introspect`
(RFC 7662) and `revoke` (RFC 7009), for the client's own tokens.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Self
from urllib.parse import quote_plus

import httpx

from chargenet_partner.assertions import PrivateKeyJwt

AuthMethod = Literal["basic", "post", "private_key_jwt"]
RENEW_BEFORE = 60.0
DEFAULT_EXPIRES_IN = 300  # used when a server omits expires_in (RFC 6749 §5.1 only recommends it)


class TokenRequestError(Exception):
    """The token endpoint refused the request; `error` is the RFC 6749 §5.2 code."""

    def __init__(self, status: int, error: str, description: str | None) -> None:
        super().__init__(f"token request refused ({status} {error}): {description or ''}".rstrip(": "))
        self.status = status
        self.error = error
        self.description = description


class TokenResponseError(Exception):
    """The token endpoint answered something that is not an RFC 6749 §5.1 bearer token response."""


@dataclass(frozen=True, slots=True)
class Token:
    access_token: str
    expires_in: int
    obtained_at: float  # on the client's monotonic clock
    scope: str | None = None

    def renew_at(self, renew_before: float) -> float:
        # A token shorter-lived than twice the margin is renewed at half its life instead.
        return self.obtained_at + self.expires_in - min(renew_before, self.expires_in / 2)


def _basic_header(client_id: str, client_secret: str) -> str:
    # RFC 6749 §2.3.1: both halves are form-urlencoded before base64.
    raw = f"{quote_plus(client_id)}:{quote_plus(client_secret)}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")


def _beside(token_url: str, name: str) -> str:
    """chargenet's introspection and revocation endpoints sit beside its token endpoint."""
    base, slash, last = token_url.rpartition("/")
    if not slash or last != "token":
        raise ValueError(f"give the {name} URL: it cannot be derived from {token_url!r}")
    return f"{base}/{name}"


class _Base:
    def __init__(
        self,
        token_url: str,
        client_id: str,
        client_secret: str | None = None,
        *,
        auth_method: AuthMethod | None = None,
        private_key_jwt: PrivateKeyJwt | None = None,
        audience: str | None = None,
        introspection_url: str | None = None,
        revocation_url: str | None = None,
        scope: str | None = None,
        renew_before: float = RENEW_BEFORE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if auth_method is None:
            auth_method = "private_key_jwt" if private_key_jwt is not None else "basic"
        if auth_method not in ("basic", "post", "private_key_jwt"):
            raise ValueError("auth_method must be 'basic', 'post' or 'private_key_jwt'")
        if auth_method == "private_key_jwt" and private_key_jwt is None:
            raise ValueError("private_key_jwt needs a PrivateKeyJwt")
        if auth_method != "private_key_jwt" and not client_secret:
            raise ValueError(f"{auth_method} needs a client_secret")
        self.token_url = token_url
        self.introspection_url = introspection_url
        self.revocation_url = revocation_url
        self._client_id = client_id
        self._client_secret = client_secret or ""
        self._private_key_jwt = private_key_jwt
        # RFC 7523 §3: the token endpoint's URL identifies the server; chargenet takes it at every endpoint.
        self._audience = audience or token_url
        self._auth_method = auth_method
        self._scope = scope
        self._renew_before = renew_before
        self._clock = clock
        self._token: Token | None = None

    def _fresh(self) -> Token | None:
        token = self._token
        if token is not None and self._clock() < token.renew_at(self._renew_before):
            return token
        return None

    def invalidate(self) -> None:
        """Forget the cached token, e.g. after the API answered 401 to it."""
        self._token = None

    def _request_parts(self) -> tuple[dict[str, str], dict[str, str]]:
        form = {"grant_type": "client_credentials"}
        if self._scope:
            form["scope"] = self._scope
        return self._authenticated(form)

    def _authenticated(self, form: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
        headers = {"Accept": "application/json"}
        if self._auth_method == "basic":
            headers["Authorization"] = _basic_header(self._client_id, self._client_secret)
        elif self._auth_method == "post":
            form = {**form, "client_id": self._client_id, "client_secret": self._client_secret}
        else:
            assert self._private_key_jwt is not None
            form = {**form, "client_id": self._client_id, **self._private_key_jwt.form(self._client_id, self._audience)}
        return form, headers

    def _operation(self, name: str, token: str) -> tuple[str, dict[str, str], dict[str, str]]:
        url = self.introspection_url if name == "introspect" else self.revocation_url
        form, headers = self._authenticated({"token": token})
        return url or _beside(self.token_url, name), form, headers

    @staticmethod
    def _refused(response: httpx.Response) -> Exception:
        body = _json(response)
        error = body.get("error") if isinstance(body, dict) else None
        description = body.get("error_description") if isinstance(body, dict) else None
        if not isinstance(error, str):
            return TokenResponseError(f"the server answered {response.status_code} without an OAuth error")
        return TokenRequestError(response.status_code, error, description if isinstance(description, str) else None)

    def _introspection(self, response: httpx.Response) -> dict[str, Any]:
        if response.status_code != 200:
            raise self._refused(response)
        body = _json(response)
        if not isinstance(body, dict) or not isinstance(body.get("active"), bool):
            raise TokenResponseError("the introspection response has no boolean active member")
        return body

    def _revocation(self, response: httpx.Response) -> None:
        if response.status_code != 200:
            raise self._refused(response)

    def _accept(self, response: httpx.Response, started: float) -> Token:
        body = _json(response)
        if response.status_code != 200:
            raise self._refused(response)
        if not isinstance(body, dict):
            raise TokenResponseError("token response is not a JSON object")
        access_token, token_type = body.get("access_token"), body.get("token_type")
        expires_in = body.get("expires_in", DEFAULT_EXPIRES_IN)
        if not isinstance(access_token, str) or not access_token:
            raise TokenResponseError("token response has no access_token")
        if not isinstance(token_type, str) or token_type.lower() != "bearer":
            raise TokenResponseError(f"token_type {token_type!r} is not Bearer")
        if isinstance(expires_in, bool) or not isinstance(expires_in, int) or expires_in <= 0:
            raise TokenResponseError(f"expires_in {expires_in!r} is not a positive integer")
        scope = body.get("scope")
        # Lifetime counts from when the request was sent: the server started the clock no earlier.
        token = Token(access_token, expires_in, started, scope if isinstance(scope, str) else None)
        self._token = token
        return token


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


class TokenClient(_Base):
    """Thread-safe synchronous client. Use `token()` for the access token string."""

    def __init__(
        self,
        token_url: str,
        client_id: str,
        client_secret: str | None = None,
        *,
        auth_method: AuthMethod | None = None,
        private_key_jwt: PrivateKeyJwt | None = None,
        audience: str | None = None,
        introspection_url: str | None = None,
        revocation_url: str | None = None,
        scope: str | None = None,
        renew_before: float = RENEW_BEFORE,
        clock: Callable[[], float] = time.monotonic,
        http: httpx.Client | None = None,
        timeout: float = 10.0,
    ) -> None:
        super().__init__(
            token_url,
            client_id,
            client_secret,
            auth_method=auth_method,
            private_key_jwt=private_key_jwt,
            audience=audience,
            introspection_url=introspection_url,
            revocation_url=revocation_url,
            scope=scope,
            renew_before=renew_before,
            clock=clock,
        )
        self._own_http = http is None
        self._http = http or httpx.Client(timeout=timeout)
        self._lock = threading.Lock()

    def token(self) -> str:
        return self.get().access_token

    def get(self) -> Token:
        token = self._fresh()
        if token is not None:
            return token
        with self._lock:
            # Whoever held the lock before us may have renewed it already.
            token = self._fresh()
            if token is not None:
                return token
            form, headers = self._request_parts()
            started = self._clock()
            response = self._http.post(self.token_url, data=form, headers=headers)
            return self._accept(response, started)

    def introspect(self, token: str) -> dict[str, Any]:
        """RFC 7662: `{"active": true, ...claims}` for one of this client's tokens still accepted, else
        `{"active": false}` (also for another client's token)."""
        url, form, headers = self._operation("introspect", token)
        return self._introspection(self._http.post(url, data=form, headers=headers))

    def revoke(self, token: str) -> None:
        """RFC 7009: revoke one of this client's tokens; the API refuses it within seconds. A token that is not
        valid needs no revoking and succeeds too; another client's token raises TokenRequestError."""
        url, form, headers = self._operation("revoke", token)
        self._revocation(self._http.post(url, data=form, headers=headers))
        if self._token is not None and self._token.access_token == token:
            self._token = None

    def close(self) -> None:
        if self._own_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncTokenClient(_Base):
    """asyncio client for one event loop. Use `await token()` for the access token string."""

    def __init__(
        self,
        token_url: str,
        client_id: str,
        client_secret: str | None = None,
        *,
        auth_method: AuthMethod | None = None,
        private_key_jwt: PrivateKeyJwt | None = None,
        audience: str | None = None,
        introspection_url: str | None = None,
        revocation_url: str | None = None,
        scope: str | None = None,
        renew_before: float = RENEW_BEFORE,
        clock: Callable[[], float] = time.monotonic,
        http: httpx.AsyncClient | None = None,
        timeout: float = 10.0,
    ) -> None:
        super().__init__(
            token_url,
            client_id,
            client_secret,
            auth_method=auth_method,
            private_key_jwt=private_key_jwt,
            audience=audience,
            introspection_url=introspection_url,
            revocation_url=revocation_url,
            scope=scope,
            renew_before=renew_before,
            clock=clock,
        )
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)
        self._lock = asyncio.Lock()

    async def token(self) -> str:
        return (await self.get()).access_token

    async def get(self) -> Token:
        token = self._fresh()
        if token is not None:
            return token
        async with self._lock:
            token = self._fresh()
            if token is not None:
                return token
            form, headers = self._request_parts()
            started = self._clock()
            response = await self._http.post(self.token_url, data=form, headers=headers)
            return self._accept(response, started)

    async def introspect(self, token: str) -> dict[str, Any]:
        """As `TokenClient.introspect`."""
        url, form, headers = self._operation("introspect", token)
        return self._introspection(await self._http.post(url, data=form, headers=headers))

    async def revoke(self, token: str) -> None:
        """As `TokenClient.revoke`."""
        url, form, headers = self._operation("revoke", token)
        self._revocation(await self._http.post(url, data=form, headers=headers))
        if self._token is not None and self._token.access_token == token:
            self._token = None

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
