"""The one place where errors become RFC 9457 `application/problem+json` responses."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse

from chargenet.errors import ChargenetError, Conflict, Forbidden, InvalidInput, NotFound

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"

# Most specific first: the first class in the error's MRO found here decides the status.
_STATUS: dict[type[ChargenetError], tuple[int, str]] = {
    InvalidInput: (422, "Invalid input"),
    NotFound: (404, "Not found"),
    Conflict: (409, "Conflict"),
    Forbidden: (403, "Forbidden"),
}


def problem(status: int, title: str, detail: str | None = None, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status}
    if detail:
        body["detail"] = detail
    body.update(extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON)


def _for_error(exc: ChargenetError) -> JSONResponse:
    for cls in type(exc).__mro__:
        if cls in _STATUS:
            status, title = _STATUS[cls]
            extra = {"field": exc.field} if isinstance(exc, InvalidInput) and exc.field else {}
            return problem(status, title, exc.message, **extra)
    log.error("unmapped error reached the API", exc_info=exc)
    return problem(500, "Internal Server Error")


def install_problem_handlers(app: FastAPI) -> None:
    async def on_chargenet_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ChargenetError)
        return _for_error(exc)

    async def on_validation_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = [
            {"field": ".".join(str(p) for p in e["loc"] if p != "body"), "message": e["msg"]} for e in exc.errors()
        ]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return problem(422, "Invalid input", detail, errors=errors)

    async def on_http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        response = problem(exc.status_code, _title(exc.status_code), str(exc.detail) if exc.detail else None)
        for key, value in (exc.headers or {}).items():
            response.headers[key] = value
        return response

    async def on_unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error in the API", exc_info=exc)
        return problem(500, "Internal Server Error")

    app.add_exception_handler(ChargenetError, on_chargenet_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)


def _title(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
