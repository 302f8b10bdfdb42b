"""Parsing the token request of RFC 6749 (§2.3, §3.2, §4.4, §5), and the introspection (RFC 7662) and
revocation (RFC 7009) requests that authenticate the same way, without any I/O.

`parse_token_request` turns what arrived (method, query, headers, body) into the client's credentials or
a `TokenError` carrying the RFC error code and HTTP status; `parse_token_operation` does the same for a request
about one token (introspect or revoke). `token_error_for` maps the errors raised
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
        are form-urlencoded before base64 (§2.3.1), client_id + client_secret in the body, or a signed
        client_assertion of type JWT_BEARER (RFC 7523 §2.2), whose `sub` names the client.
Rule 5: grant_type is required and must be client_credentials (§4.4.2).
Rule 6: a scope parameter is refused with invalid_scope: what an application may do comes from its groups.
For introspection and revocation, Rules 1-4 hold as they are and `token` is required instead of Rules 5-6;
`token_type_hint` may be sent and is not needed: chargenet issues one type of token.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import parse_qsl, unquote_plus

from chargenet.auth.client_assertions import JWT_BEARER, assertion_subject
from chargenet.auth.errors import ClientAuthenticationFailed, TokenOfAnotherClient, TooManyFailedAttempts
from chargenet.domain.text import UTF8_BOM, is_storable

FORM_TYPE = "application/x-www-form-urlencoded"
TOKEN_PARAMETERS = frozenset(
    {"grant_type", "client_id", "client_secret", "scope", "client_assertion", "client_assertion_type", "token"}
)
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
    PRIVATE_KEY_JWT = "private_key_jwt"


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
class ClientAssertion:
    """A private_key_jwt assertion, not yet verified; `client_id` is the client it claims to be."""

    client_id: str
    assertion: str
    method: AuthMethod = AuthMethod.PRIVATE_KEY_JWT


ClientAuthentication = ClientCredentials | ClientAssertion


@dataclass(frozen=True, slots=True)
class TokenOperation:
    """An introspection or revocation request: who asks, and about which token."""

    credentials: ClientAuthentication
    token: str


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


def parse_token_request(request: RawTokenRequest) -> ClientAuthentication | TokenError:
    """The credentials of a well-formed client credentials grant, or the error to answer with."""
    authenticated = _authenticated(request, "token")
    if isinstance(authenticated, TokenError):
        return authenticated
    params, credentials = authenticated
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


def parse_token_operation(request: RawTokenRequest, endpoint: str) -> TokenOperation | TokenError:
    """The credentials and the token of a well-formed introspection or revocation request (`endpoint` names which,
    for messages), or the error to answer with."""
    authenticated = _authenticated(request, endpoint)
    if isinstance(authenticated, TokenError):
        return authenticated
    params, credentials = authenticated
    token = params.get("token")
    if token is None:
        return _invalid_request("token is missing")
    return TokenOperation(credentials, token)


def _authenticated(request: RawTokenRequest, endpoint: str) -> tuple[dict[str, str], ClientAuthentication] | TokenError:
    """Rules 1-4: the form's parameters and the client's credentials."""
    if request.method.upper() != "POST":
        return TokenError(ErrorCode.INVALID_REQUEST, f"the {endpoint} endpoint accepts POST only", 405, allow="POST")
    try:
        query = parse_qsl(request.query, keep_blank_values=True, errors="strict") if request.query else []
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
    return params, credentials


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


def _credentials(authorization: tuple[str, ...], params: dict[str, str]) -> ClientAuthentication | TokenError:
    if len(authorization) > 1:
        return _invalid_request("more than one Authorization header")
    body_id, body_secret = params.get("client_id"), params.get("client_secret")
    if "client_assertion" in params or "client_assertion_type" in params:
        if authorization or body_secret is not None:
            return _invalid_request("use one client authentication method: a client assertion or a secret, not both")
        return _assertion(params, body_id)
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


def _assertion(params: dict[str, str], body_id: str | None) -> ClientAssertion | TokenError:
    assertion, assertion_type = params.get("client_assertion"), params.get("client_assertion_type")
    if assertion is None or assertion_type is None:
        return _invalid_request("client_assertion and client_assertion_type must both be given")
    if assertion_type != JWT_BEARER:
        # RFC 7521 §4.2.1: an assertion type the server does not support is invalid_client.
        return _invalid_client(f"client_assertion_type must be {JWT_BEARER}")
    subject = assertion_subject(assertion)
    if subject is None:
        return _invalid_client("the client assertion is not a JWT naming its client in sub")
    if body_id is not None and body_id != subject:
        return _invalid_client("client_id differs from the client assertion's sub")
    return ClientAssertion(subject, assertion)


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
    if isinstance(error, TokenOfAnotherClient):
        return TokenError(ErrorCode.UNAUTHORIZED_CLIENT, "the token was issued to another client", 400)
    return TokenError(ErrorCode.SERVER_ERROR, "the request could not be processed", 500)
