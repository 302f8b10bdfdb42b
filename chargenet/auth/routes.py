"""HTTP for the authorization server (decisions.md §1, §4, §5): the token, introspection (RFC 7662) and revocation
(RFC 7009) endpoints, the key set and the metadata.

Plain Starlette rather than FastAPI: the token endpoint is the hottest path of the service, and its wire
form is RFC 6749's, not the API's.
"""

from __future__ import annotations

import json

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from chargenet.auth.errors import ClientAuthenticationFailed, TokenOfAnotherClient, TooManyFailedAttempts
from chargenet.auth.keyring import JWKS_MAX_AGE
from chargenet.auth.server import AuthServer
from chargenet.auth.token_request import (
    ErrorCode,
    RawTokenRequest,
    TokenError,
    TokenOperation,
    parse_token_operation,
    parse_token_request,
    token_error_for,
)

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
MAX_BODY = 4096
# Introspection and revocation carry a token, and perhaps a client assertion, each of up to 8 KiB.
MAX_OPERATION_BODY = 20_480
METADATA_MAX_AGE = 3600
# What `JSONResponse` renders with, made once: `json.dumps` with any option builds an encoder for every call.
_TOKEN_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _error(error: TokenError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers={**NO_STORE, **error.headers()})


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The body, or None past `limit` bytes: `request.stream()`'s loop, without its generator (nothing before the
    endpoint reads the body)."""
    body = b""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect
        chunk: bytes = message.get("body", b"")
        body += chunk
        if len(body) > limit:
            return None
        if not message.get("more_body", False):
            return body


async def _raw(request: Request, limit: int = MAX_BODY) -> RawTokenRequest | TokenError:
    body = await _read_body(request, limit) if request.method == "POST" else b""
    if body is None:
        return TokenError(ErrorCode.INVALID_REQUEST, "the request body is too large", 413)
    # What `request.url.query`, `request.headers.get` and `getlist` give, read off the scope in one pass: building
    # the URL and the headers' mapping cost more than parsing the form.
    content_type: str | None = None
    authorization: list[str] = []
    for name, value in request.scope["headers"]:
        if name == b"content-type" and content_type is None:
            content_type = value.decode("latin-1")
        elif name == b"authorization":
            authorization.append(value.decode("latin-1"))
    return RawTokenRequest(
        method=request.method,
        query=request.scope["query_string"].decode("latin-1"),
        content_type=content_type,
        authorization=tuple(authorization),
        body=body,
    )


async def _operation(request: Request, endpoint: str) -> TokenOperation | TokenError:
    raw = await _raw(request, MAX_OPERATION_BODY)
    return raw if isinstance(raw, TokenError) else parse_token_operation(raw, endpoint)


def auth_routes(server: AuthServer) -> list[BaseRoute]:
    """`/auth/...` plus the RFC 8414 §3.1 location at the root, to be added to the app's routes."""

    async def token(request: Request) -> Response:
        raw = await _raw(request)
        if isinstance(raw, TokenError):
            return _error(raw)
        parsed = parse_token_request(raw)
        if isinstance(parsed, TokenError):
            return _error(parsed)
        address = request.client.host if request.client else None
        try:
            issued = await server.grant(parsed, address)
        except (ClientAuthenticationFailed, TooManyFailedAttempts) as exc:
            return _error(token_error_for(exc))
        answer: dict[str, object] = {
            "access_token": issued.access_token,
            "token_type": "Bearer",
            "expires_in": issued.expires_in,
        }
        if issued.claims.scopes:
            # RFC 6749 §5.1: required when it differs from what was asked, and nothing was asked.
            answer["scope"] = " ".join(issued.claims.scopes)
        return Response(_TOKEN_JSON.encode(answer).encode(), media_type="application/json", headers=NO_STORE)

    async def introspect(request: Request) -> Response:
        operation = await _operation(request, "introspection")
        if isinstance(operation, TokenError):
            return _error(operation)
        address = request.client.host if request.client else None
        try:
            answer = await server.introspect(operation.credentials, operation.token, address)
        except (ClientAuthenticationFailed, TooManyFailedAttempts) as exc:
            return _error(token_error_for(exc))
        return JSONResponse(answer, headers=NO_STORE)

    async def revoke(request: Request) -> Response:
        operation = await _operation(request, "revocation")
        if isinstance(operation, TokenError):
            return _error(operation)
        address = request.client.host if request.client else None
        try:
            await server.revoke(operation.credentials, operation.token, address)
        except (ClientAuthenticationFailed, TooManyFailedAttempts, TokenOfAnotherClient) as exc:
            return _error(token_error_for(exc))
        # RFC 7009 §2.2: 200 whether or not there was anything to revoke; the body is ignored by clients.
        return Response(status_code=200, headers=NO_STORE)

    async def jwks(_: Request) -> Response:
        return JSONResponse(
            server.jwks(),
            media_type="application/jwk-set+json",
            headers={"Cache-Control": f"public, max-age={JWKS_MAX_AGE}"},
        )

    async def metadata(_: Request) -> Response:
        return JSONResponse(server.metadata(), headers={"Cache-Control": f"public, max-age={METADATA_MAX_AGE}"})

    every_method = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    return [
        Route("/.well-known/oauth-authorization-server/auth", metadata, methods=["GET"]),
        Mount(
            "/auth",
            routes=[
                Route("/oauth2/token", token, methods=every_method),
                Route("/oauth2/introspect", introspect, methods=every_method),
                Route("/oauth2/revoke", revoke, methods=every_method),
                Route("/.well-known/jwks.json", jwks, methods=["GET"]),
                Route("/.well-known/oauth-authorization-server", metadata, methods=["GET"]),
                Route("/.well-known/openid-configuration", metadata, methods=["GET"]),
            ],
        ),
    ]
