"""The bearer check every API endpoint shares (RFC 6750), as FastAPI dependencies.

`require(scope)` authenticates the caller and checks that some group grants `scope` somewhere; routes
then narrow with `Caller.permissions` (allows / reach) for the objects they touch. Errors are raised as
`MissingToken`, `InvalidToken` and `InsufficientScope`; `chargenet.api.problems` renders them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from chargenet.auth.errors import InsufficientScope, InvalidToken, MissingToken
from chargenet.auth.server import AuthServer, Caller
from chargenet.domain.scopes import Scope


def _server(request: Request) -> AuthServer:
    server = request.app.state.context.auth
    assert isinstance(server, AuthServer), "the auth server is not installed"
    return server


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization")
    if header is None:
        raise MissingToken()
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        # RFC 6750 §3.1: a request without bearer credentials gets a challenge with no error code.
        raise MissingToken()
    token = token.strip()
    if not token:
        raise InvalidToken("empty bearer token")
    return token


# Declares the scheme in the OpenAPI document only; the header is parsed by `bearer_token` so that every
# refusal goes through the one RFC 6750 mapping.
_openapi_scheme = HTTPBearer(
    auto_error=False, bearerFormat="JWT", description="An access token from POST {auth_url}/oauth2/token"
)
_Declared = Annotated[HTTPAuthorizationCredentials | None, Depends(_openapi_scheme)]


def require(scope: Scope) -> Callable[[Request, HTTPAuthorizationCredentials | None], Awaitable[Caller]]:
    async def dependency(request: Request, _: _Declared) -> Caller:
        caller = await _server(request).authenticate(bearer_token(request))
        if not caller.permissions.anywhere(scope):
            raise InsufficientScope(scope.value)
        return caller

    return dependency
