"""How a webhook request authenticates to the partner (service.md §5.2, decisions.md §3-§4): pure parts.

Four types: none; HTTP Basic; a static token sent as `Authorization: Token <T>`; OAuth2 client credentials,
where the sender first gets a bearer token from the partner's token URL. Client authentication at the token
endpoint is `basic` (default, RFC 6749 §2.3.1: client id and secret form-urlencoded, then Basic) or `post`
(both in the body); no `scope` unless one is configured.

Tokens are cached until shortly before expiry: the margin is a tenth of the lifetime, at most 60 s, so a
15-minute token is renewed after 14 minutes and a 30-second one after 27 s. A 401 from the partner renews the
token once before the attempt counts as failed (the sender does that; this module only says what to send).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from urllib.parse import quote, urlsplit

from chargenet.errors import InvalidInput

DEFAULT_TOKEN_LIFETIME = timedelta(seconds=300)
MAX_RENEW_MARGIN = timedelta(seconds=60)


class AuthType(StrEnum):
    NONE = "none"
    BASIC = "basic"
    OAUTH2 = "oauth2"
    TOKEN = "token"  # noqa: S105 - the auth type name, not a secret


class TokenAuthMethod(StrEnum):
    BASIC = "basic"
    POST = "post"


@dataclass(frozen=True, slots=True)
class NoAuth:
    type: AuthType = AuthType.NONE


@dataclass(frozen=True, slots=True)
class BasicAuth:
    username: str
    password: str
    type: AuthType = AuthType.BASIC


@dataclass(frozen=True, slots=True)
class StaticToken:
    token: str
    type: AuthType = AuthType.TOKEN


@dataclass(frozen=True, slots=True)
class OAuth2ClientCredentials:
    token_url: str
    client_id: str
    client_secret: str
    token_auth_method: TokenAuthMethod = TokenAuthMethod.BASIC
    scope: str | None = None
    type: AuthType = AuthType.OAUTH2


OutboundAuth = NoAuth | BasicAuth | StaticToken | OAuth2ClientCredentials


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def static_authorization(auth: OutboundAuth) -> str | None:
    """The `Authorization` value for the types that need no token endpoint (None for none and oauth2)."""
    if isinstance(auth, BasicAuth):
        return _basic(auth.username, auth.password)
    if isinstance(auth, StaticToken):
        return f"Token {auth.token}"
    return None


@dataclass(frozen=True, slots=True)
class TokenRequest:
    url: str
    form: dict[str, str]
    headers: dict[str, str]


def token_request(auth: OAuth2ClientCredentials) -> TokenRequest:
    form = {"grant_type": "client_credentials"}
    headers = {"Accept": "application/json"}
    if auth.scope:
        form["scope"] = auth.scope
    if auth.token_auth_method is TokenAuthMethod.BASIC:
        headers["Authorization"] = _basic(quote(auth.client_id, safe=""), quote(auth.client_secret, safe=""))
    else:
        form |= {"client_id": auth.client_id, "client_secret": auth.client_secret}
    return TokenRequest(auth.token_url, form, headers)


@dataclass(frozen=True, slots=True)
class CachedToken:
    access_token: str
    obtained_at: datetime
    expires_at: datetime

    def usable(self, now: datetime) -> bool:
        margin = min(MAX_RENEW_MARGIN, (self.expires_at - self.obtained_at) / 10)
        return now < self.expires_at - margin


class TokenResponseInvalid(InvalidInput):
    """The partner's token endpoint answered something that is not an RFC 6749 §5.1 bearer token."""


def parse_token_response(status: int, document: Any, now: datetime) -> CachedToken:
    """Read a token endpoint answer; raises TokenResponseInvalid with the reason."""
    if status != 200:
        error = document.get("error") if isinstance(document, dict) else None
        suffix = f" ({error})" if isinstance(error, str) else ""
        raise TokenResponseInvalid(f"token endpoint answered HTTP {status}{suffix}")
    if not isinstance(document, dict):
        raise TokenResponseInvalid("token endpoint did not answer a JSON object")
    token = document.get("access_token")
    token_type = document.get("token_type")
    if not isinstance(token, str) or not token:
        raise TokenResponseInvalid("token endpoint answer has no access_token")
    if not isinstance(token_type, str) or token_type.lower() != "bearer":
        raise TokenResponseInvalid(f"token type {token_type!r} is not Bearer")
    expires_in = document.get("expires_in")
    if isinstance(expires_in, bool) or not isinstance(expires_in, int | float | None) or (expires_in or 1) <= 0:
        raise TokenResponseInvalid("expires_in is not a positive number")
    lifetime = timedelta(seconds=expires_in) if expires_in else DEFAULT_TOKEN_LIFETIME
    return CachedToken(token, now, now + lifetime)


def check_url(url: str, field: str = "url") -> str:
    """An absolute http(s) URL without credentials or fragment; raises InvalidInput naming `field`."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidInput(f"{url!r} is not a URL ({exc})", field=field) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"{url!r} is not an http:// or https:// URL", field=field)
    if parts.username or parts.password:
        raise InvalidInput("credentials in the URL are not allowed; use the auth settings", field=field)
    if parts.fragment:
        raise InvalidInput("a URL fragment is not sent to the server", field=field)
    if port == 0:
        raise InvalidInput("port 0 cannot be connected to", field=field)
    return url


def to_document(auth: OutboundAuth) -> dict[str, Any]:
    """The credentials as a JSON document, for encryption at rest."""
    if isinstance(auth, NoAuth):
        return {"type": "none"}
    if isinstance(auth, BasicAuth):
        return {"type": "basic", "username": auth.username, "password": auth.password}
    if isinstance(auth, StaticToken):
        return {"type": "token", "token": auth.token}
    return {
        "type": "oauth2",
        "tokenUrl": auth.token_url,
        "clientId": auth.client_id,
        "clientSecret": auth.client_secret,
        "tokenAuthMethod": auth.token_auth_method.value,
        "scope": auth.scope,
    }


def from_document(document: dict[str, Any]) -> OutboundAuth:
    kind = document.get("type")
    if kind == "basic":
        return BasicAuth(str(document["username"]), str(document["password"]))
    if kind == "token":
        return StaticToken(str(document["token"]))
    if kind == "oauth2":
        scope = document.get("scope")
        return OAuth2ClientCredentials(
            token_url=str(document["tokenUrl"]),
            client_id=str(document["clientId"]),
            client_secret=str(document["clientSecret"]),
            token_auth_method=TokenAuthMethod(document.get("tokenAuthMethod", "basic")),
            scope=str(scope) if scope else None,
        )
    return NoAuth()


def build_auth(
    auth_type: AuthType,
    *,
    username: str | None = None,
    password: str | None = None,
    token: str | None = None,
    token_url: str | None = None,
    client_id: str | None = None,
    client_secret: str | None = None,
    token_auth_method: TokenAuthMethod = TokenAuthMethod.BASIC,
    scope: str | None = None,
) -> OutboundAuth:
    """Validate the settings of one auth type; raises InvalidInput naming the missing or extra field."""
    given = {
        "username": username,
        "password": password,
        "token": token,
        "tokenUrl": token_url,
        "clientId": client_id,
        "clientSecret": client_secret,
        "tokenScope": scope,
    }
    needed = {
        AuthType.NONE: (),
        AuthType.BASIC: ("username", "password"),
        AuthType.TOKEN: ("token",),
        AuthType.OAUTH2: ("tokenUrl", "clientId", "clientSecret"),
    }[auth_type]
    optional = ("tokenScope",) if auth_type is AuthType.OAUTH2 else ()
    for name in needed:
        if not given[name]:
            raise InvalidInput(f"auth type {auth_type.value} needs {name}", field=name)
    for name, value in given.items():
        if value and name not in needed and name not in optional:
            raise InvalidInput(f"{name} does not apply to auth type {auth_type.value}", field=name)
    if auth_type is AuthType.BASIC:
        assert username is not None and password is not None
        if ":" in username:
            raise InvalidInput("a Basic user name cannot contain ':'", field="username")
        return BasicAuth(username, password)
    if auth_type is AuthType.TOKEN:
        assert token is not None
        return StaticToken(token)
    if auth_type is AuthType.OAUTH2:
        assert token_url is not None and client_id is not None and client_secret is not None
        return OAuth2ClientCredentials(
            check_url(token_url, "tokenUrl"), client_id, client_secret, token_auth_method, scope or None
        )
    return NoAuth()
