"""The one place where errors become RFC 9457 `application/problem+json` responses."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse
from starlette.routing import Match

from chargenet.auth.errors import InsufficientScope, InvalidToken, MissingToken, RateLimitExceeded
from chargenet.errors import (
    ChargenetError,
    Conflict,
    Forbidden,
    ImportClash,
    ImportRefused,
    InputTooLarge,
    InvalidInput,
    NotFound,
    StationAnswerFailed,
    StationCommandError,
    StationDidNotAnswer,
    StationNotConnected,
    UnreadableInput,
)

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"

# Most specific first: the first class in the error's MRO found here decides the status.
_STATUS: dict[type[ChargenetError], tuple[int, str]] = {
    UnreadableInput: (400, "Unreadable input"),
    InputTooLarge: (413, "Content too large"),
    InvalidInput: (422, "Invalid input"),
    NotFound: (404, "Not found"),
    Conflict: (409, "Conflict"),
    Forbidden: (403, "Forbidden"),
    StationNotConnected: (503, "Station not connected"),
    StationAnswerFailed: (502, "Station answered with an error"),
    StationDidNotAnswer: (504, "Station did not answer"),
}


def problem(status: int, title: str, detail: str | None = None, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status}
    if detail:
        body["detail"] = detail
    body.update(extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON)


BEARER_REALM = 'Bearer realm="chargenet"'


def _for_auth_error(exc: ChargenetError) -> JSONResponse | None:
    """RFC 6750 §3: a challenge on 401 and 403, with an error code only when a token was sent. The reason a
    token was refused goes to the log, never to the caller."""
    if isinstance(exc, MissingToken):
        response = problem(401, "Unauthorized", "an access token is required")
        response.headers["WWW-Authenticate"] = BEARER_REALM
        return response
    if isinstance(exc, InvalidToken):
        log.info("access token refused", extra={"fields": {"reason": exc.reason}})
        response = problem(401, "Unauthorized", "the access token is invalid, expired or revoked")
        response.headers["WWW-Authenticate"] = (
            f'{BEARER_REALM}, error="invalid_token", error_description="the access token is invalid"'
        )
        return response
    if isinstance(exc, RateLimitExceeded):
        # The RateLimit and RateLimit-Policy headers are added to every answer by `rate_limit_headers`.
        response = problem(429, "Too Many Requests", exc.message)
        response.headers["Retry-After"] = str(exc.retry_after)
        return response
    if isinstance(exc, InsufficientScope):
        response = problem(403, "Forbidden", f"the application's groups do not grant {exc.scope}")
        response.headers["WWW-Authenticate"] = f'{BEARER_REALM}, error="insufficient_scope", scope="{exc.scope}"'
        return response
    return None


def for_error(exc: ChargenetError) -> JSONResponse:
    """The problem answering `exc` (also for the input check, which runs before the routes)."""
    auth = _for_auth_error(exc)
    if auth is not None:
        return auth
    for cls in type(exc).__mro__:
        if cls in _STATUS:
            status, title = _STATUS[cls]
            return problem(status, title, exc.message, **_members(exc))
    log.error("unmapped error reached the API", exc_info=exc)
    return problem(500, "Internal Server Error")


def _members(exc: ChargenetError) -> dict[str, Any]:
    """The extension members (RFC 9457 §3.2) a problem of this error carries."""
    if isinstance(exc, ImportRefused | ImportClash):
        return {"errors": [{"field": f.field or "", "message": f.message, "line": f.line} for f in exc.faults]}
    if isinstance(exc, InvalidInput) and exc.field:
        return {"field": exc.field}
    members: dict[str, Any] = {}
    if isinstance(exc, StationCommandError) and exc.request_id is not None:
        members["requestId"] = exc.request_id
    if isinstance(exc, StationAnswerFailed):
        if exc.code is not None:
            members["stationErrorCode"] = exc.code
        members["stationErrorDescription"] = exc.description
    return members


def install_problem_handlers(app: FastAPI) -> None:
    async def on_chargenet_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ChargenetError)
        return for_error(exc)

    async def on_validation_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = [{"field": _field(e["loc"]), "message": e["msg"]} for e in exc.errors()]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        extra = {"field": errors[0]["field"]} if errors and errors[0]["field"] else {}
        return problem(422, "Invalid input", detail, errors=errors, **extra)

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        return http_problem(request, exc)

    async def on_unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error in the API", exc_info=exc)
        return problem(500, "Internal Server Error")

    app.add_exception_handler(ChargenetError, on_chargenet_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)


# Where FastAPI found a refused value; the field is named by its place in the body, query, path or headers alone.
_LOCATIONS = frozenset({"body", "query", "path", "header", "cookie"})


def _field(location: Sequence[int | str]) -> str:
    parts = list(location)
    if parts and parts[0] in _LOCATIONS:
        parts = parts[1:]
    return ".".join(str(p) for p in parts)


def http_problem(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    """The problem for an error of the routing itself: no route at the path (404), or none for the method (405,
    with an `Allow` header listing every method the path has, RFC 9110 §15.5.6)."""
    response = problem(exc.status_code, _title(exc.status_code), str(exc.detail) if exc.detail else None)
    for key, value in (exc.headers or {}).items():
        response.headers[key] = value
    if exc.status_code == 405:
        response.headers["Allow"] = ", ".join(allowed_methods(request))
    return response


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> list[str]:
    """The methods some route of the request's app serves at the request's path (asked of the routes themselves,
    which know how the framework matches them)."""
    routes = getattr(getattr(request.app, "router", None), "routes", ())
    allowed = []
    for method in _METHODS:
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] is Match.FULL for route in routes):
            allowed.append(method)
    return allowed


def _title(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
