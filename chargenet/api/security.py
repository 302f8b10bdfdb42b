"""The bearer check every API endpoint shares (RFC 6750), as one FastAPI dependency.

`require(scope)` authenticates the caller, admits the request under the application's rate limit (429 once it is
spent), checks that some group grants `scope` somewhere (403 otherwise, as
decisions.md §4 says for lists), and hands the route the caller as the use cases know it
(`services.callers.ApiApplication`); each use case then checks the objects it touches against the caller's
reach. Errors are raised as `MissingToken`, `InvalidToken`, `RateLimitExceeded` and `InsufficientScope`;
`chargenet.api.problems` renders them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from chargenet.api.dependencies import Context
from chargenet.api.rate_limit_headers import DECISION
from chargenet.auth.errors import InsufficientScope, InvalidToken, MissingToken, RateLimitExceeded
from chargenet.domain.scopes import Scope
from chargenet.services.callers import ApiApplication


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


Requirement = Callable[[Request, Context, HTTPAuthorizationCredentials | None], Awaitable[ApiApplication]]

# Which scope each dependency made by `require` checks, so that `chargenet.api.openapi` publishes the scopes from
# the check itself rather than from a second list that could drift from it.
_required: dict[Callable[..., object], Scope] = {}


def require(scope: Scope) -> Requirement:
    async def dependency(request: Request, context: Context, _: _Declared) -> ApiApplication:
        assert context.auth is not None, "the auth server is installed"
        caller = await context.auth.authenticate(bearer_token(request))
        # Every authenticated request counts against the application's limit, whatever its answer; the headers
        # telling where it stands go on that answer (`rate_limit_headers`).
        decision = await context.auth.rate_limits.admit(caller.principal)
        request.scope[DECISION] = decision
        if not decision.allowed:
            raise RateLimitExceeded(decision.quota.requests, decision.retry_after)
        if not caller.permissions.anywhere(scope):
            raise InsufficientScope(scope.value)
        address = request.client.host if request.client else None
        return ApiApplication(caller.claims.client_id, caller.permissions, address)

    _required[dependency] = scope
    return dependency


def required_scope(dependency: Callable[..., object]) -> Scope | None:
    """The scope `dependency` checks when `require` made it, None otherwise."""
    return _required.get(dependency)
