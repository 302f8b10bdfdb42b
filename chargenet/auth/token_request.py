"""Parsing the token request of RFC 6749 (§2.3, §3.2, §4.4, §5) without any I/O.

`parse_token_request` turns what arrived (method, query, headers, body) into the client's credentials or
a `TokenError` carrying the RFC error code and HTTP status. `token_error_for` maps the errors raised
after parsing (authentication, brute-force limits) onto the same wire form: it is the one place where the
token endpoint's errors are decided.

Rules, checked in this order so that each request gets exactly one, predictable answer:
Rule 1: only POST (405 otherwise).
Rule 2: token request parameters never travel in the query (§3.2, §2.3.1: credentials MUST NOT be in the URI).
Rule 3: the body is application/x-www-form-urlencoded, UTF-8, each parameter at most once (§3.2); a JSON body
        is refused; a parameter with an empty value counts as omitted (§3.1) but still as sent for Rule 3.
        A leading UTF-8 byte-order mark is skipped; a parameter or Basic credential holding U+0000 (which no
        store can hold) is `invalid_request` (decisions.md "Input the service refuses").
Rule 4: the client authenticates with exactly one method (§2.3): HTTP Basic, whose user name and password
        are form-urlencoded before base64 (§2.3.1), or client_id + client_secret in the body.
Rule 5: grant_type is required and must be client_credentials (§4.4.2).
Rule 6: a scope parameter is refused with invalid_scope: what an application may do comes from its groups.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import parse_qsl, unquote_plus

from chargenet.auth.errors import ClientAuthenticationFailed, TooManyFailedAttempts
from chargenet.domain.text import UTF8_BOM, is_storable

FORM_TYPE = "application/x-www-form-urlencoded"
TOKEN_PARAMETERS = frozenset({"grant_type", "client_id", "client_secret", "scope"})
MAX_PARAMETERS = 32
BASIC_CHALLENGE = 'Basic realm="chargenet", charset="UTF-8"'


class ErrorCode(StrEnum):
    INVALID_REQUEST = "invalid_request"
    INVALID_CLIENT = "invalid_client"
    INVALID_GRANT = "invalid_grant"
    UNAUTHORIZED_CLIENT = "unauthorized_client"
    UNSUPPORTED_GRANT_TYPE = "unsupported_grant_type"
    INVALID_SCOPE = "invalid_scope"
    # RFC 6749 §4.1.2.1 defines it for the authorization endpoint; it is the closest code for a 429.
    TEMPORARILY_UNAVAILABLE = "temporarily_unavailable"
    SERVER_ERROR = "server_error"


class AuthMethod(StrEnum):
    BASIC = "client_secret_basic"
    POST = "client_secret_post"


@dataclass(frozen=True, slots=True)
class RawTokenRequest:
    method: str
    query: str = ""
    content_type: str | None = None
    authorization: tuple[str, ...] = ()
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class ClientCredentials:
    client_id: str
    client_secret: str
    method: AuthMethod


@dataclass(frozen=True, slots=True)
class TokenError:
    error: ErrorCode
    description: str
    status: int
    challenge: str | None = None  # WWW-Authenticate
    allow: str | None = None  # Allow, with 405
    retry_after: int | None = None  # Retry-After, with 429

    def body(self) -> dict[str, str]:
        return {"error": self.error.value, "error_description": self.description}

    def headers(self) -> dict[str, str]:
        headers = {}
        if self.challenge:
            headers["WWW-Authenticate"] = self.challenge
        if self.allow:
            headers["Allow"] = self.allow
        if self.retry_after is not None:
            headers["Retry-After"] = str(self.retry_after)
        return headers


def _invalid_request(description: str) -> TokenError:
    return TokenError(ErrorCode.INVALID_REQUEST, description, 400)


def _invalid_client(description: str) -> TokenError:
    return TokenError(ErrorCode.INVALID_CLIENT, description, 401, challenge=BASIC_CHALLENGE)


CLIENT_AUTHENTICATION_FAILED = _invalid_client("client authentication failed")


def parse_token_request(request: RawTokenRequest) -> ClientCredentials | TokenError:
    """The credentials of a well-formed client credentials grant, or the error to answer with."""
    if request.method.upper() != "POST":
        return TokenError(ErrorCode.INVALID_REQUEST, "the token endpoint accepts POST only", 405, allow="POST")
    try:
        query = parse_qsl(request.query, keep_blank_values=True, errors="strict")
    except ValueError:
        return _invalid_request("the query string is malformed")
    in_query = sorted({name for name, _ in query} & TOKEN_PARAMETERS)
    if in_query:
        return _invalid_request(f"{', '.join(in_query)} must be sent in the request body, not in the URL")
    if not _is_form(request.content_type):
        return _invalid_request(f"the request body must be {FORM_TYPE}")
    params = _form(request.body)
    if isinstance(params, TokenError):
        return params
    credentials = _credentials(request.authorization, params)
    if isinstance(credentials, TokenError):
        return credentials
    grant_type = params.get("grant_type")
    if grant_type is None:
        return _invalid_request("grant_type is missing")
    if grant_type != "client_credentials":
        return TokenError(ErrorCode.UNSUPPORTED_GRANT_TYPE, "only client_credentials is supported", 400)
    if "scope" in params:
        return TokenError(
            ErrorCode.INVALID_SCOPE, "scope is not accepted: an application's groups decide its scopes", 400
        )
    return credentials


def _is_form(content_type: str | None) -> bool:
    if content_type is None:
        return False
    media_type, *parameters = (part.strip() for part in content_type.split(";"))
    if media_type.lower() != FORM_TYPE:
        return False
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return False
    return True


def _form(body: bytes) -> dict[str, str] | TokenError:
    if body.startswith(UTF8_BOM):
        body = body[len(UTF8_BOM) :]  # decisions.md: a leading byte-order mark is skipped
    try:
        text = body.decode("utf-8")
        pairs = parse_qsl(
            text, keep_blank_values=True, strict_parsing=bool(text), errors="strict", max_num_fields=MAX_PARAMETERS
        )
    except ValueError:
        return _invalid_request("the request body is not valid form data")
    params: dict[str, str] = {}
    seen: set[str] = set()
    for name, value in pairs:
        if not is_storable(name) or not is_storable(value):
            return _invalid_request("the request body holds U+0000, which no parameter may hold")
        if name in seen:
            return _invalid_request(f"{name} is repeated")
        seen.add(name)
        if value:
            params[name] = value
    return params


def _credentials(authorization: tuple[str, ...], params: dict[str, str]) -> ClientCredentials | TokenError:
    if len(authorization) > 1:
        return _invalid_request("more than one Authorization header")
    body_id, body_secret = params.get("client_id"), params.get("client_secret")
    if authorization:
        basic = _basic(authorization[0])
        if isinstance(basic, TokenError):
            return basic
        if body_secret is not None:
            return _invalid_request("use one client authentication method: Basic or client_secret, not both")
        if body_id is not None and body_id != basic.client_id:
            return _invalid_request("client_id in the body differs from the Basic user name")
        return basic
    if body_id is None and body_secret is None:
        return _invalid_client("client authentication is missing")
    if body_id is None or body_secret is None:
        return _invalid_client("client_id and client_secret must both be given")
    return ClientCredentials(body_id, body_secret, AuthMethod.POST)


def _basic(header: str) -> ClientCredentials | TokenError:
    scheme, _, encoded = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return _invalid_client("only HTTP Basic client authentication is accepted in the Authorization header")
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return _invalid_client("the Basic credentials are not valid base64 of UTF-8 text")
    user, colon, password = decoded.partition(":")
    if not colon:
        return _invalid_client("the Basic credentials have no ':'")
    try:
        client_id, client_secret = unquote_plus(user, errors="strict"), unquote_plus(password, errors="strict")
    except ValueError:
        return _invalid_client("the Basic credentials are not form-urlencoded UTF-8")
    if not client_id or not client_secret:
        return _invalid_client("the Basic credentials need a client id and a secret")
    if not is_storable(client_id) or not is_storable(client_secret):
        return _invalid_request("the Basic credentials hold U+0000")
    return ClientCredentials(client_id, client_secret, AuthMethod.BASIC)


def token_error_for(error: Exception) -> TokenError:
    """The wire form of an error raised while answering a token request; unknown errors leak nothing."""
    if isinstance(error, TooManyFailedAttempts):
        return TokenError(
            ErrorCode.TEMPORARILY_UNAVAILABLE,
            "too many failed client authentications; retry later",
            429,
            retry_after=error.retry_after,
        )
    if isinstance(error, ClientAuthenticationFailed):
        return CLIENT_AUTHENTICATION_FAILED
    return TokenError(ErrorCode.SERVER_ERROR, "the request could not be processed", 500)
