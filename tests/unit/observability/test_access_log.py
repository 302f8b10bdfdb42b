"""The access log middleware on a small Starlette app over ASGI: one line per request with its fields, and the
request id: taken from a sane `X-Request-ID`, else new, echoed, and on every line logged for the request."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from chargenet.observability.access_log import AccessLog
from chargenet.observability.logging import JsonFormatter
from tests.support.logs import collected_logs

NEW_ID = "new-request-id"


async def _station(request: Request) -> PlainTextResponse:
    logging.getLogger("chargenet.test").info("inside the handler")
    return PlainTextResponse(request.path_params["station_id"])


async def _broken(_: Request) -> PlainTextResponse:
    raise RuntimeError("a bug")


class Ticks:
    """A monotonic clock that moves 12.5 ms between two readings."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.0125
        return self.now


def _app(*, enabled: bool = True) -> Starlette:
    inner = Starlette(routes=[Route("/stations/{station_id}", _station)])
    routes = [Route("/stations/{station_id}", _station), Route("/broken", _broken), Mount("/api/v1", app=inner)]
    access = Middleware(AccessLog, enabled=enabled, new_id=lambda: NEW_ID, monotonic=Ticks())
    return Starlette(routes=routes, middleware=[access])


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    with collected_logs() as records:
        yield records


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=_app(), client=("203.0.113.7", 50123))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


def _access_lines(records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    return [r for r in records if r.name == "chargenet.access"]


async def test_a_sane_request_id_is_kept_and_echoed(client: httpx.AsyncClient) -> None:
    response = await client.get("/stations/ST-1", headers={"X-Request-ID": "lb-4f2a:9"})
    assert response.headers["x-request-id"] == "lb-4f2a:9"


async def test_a_missing_request_id_is_generated_and_echoed(client: httpx.AsyncClient) -> None:
    response = await client.get("/stations/ST-1")
    assert response.headers["x-request-id"] == NEW_ID


async def test_an_oversized_request_id_is_replaced(client: httpx.AsyncClient) -> None:
    response = await client.get("/stations/ST-1", headers={"X-Request-ID": "a" * 129})
    assert response.headers["x-request-id"] == NEW_ID


@pytest.mark.parametrize("forged", ['x" status=200 level="info', "x y", "caf\u00e9", ""])
async def test_a_request_id_with_characters_outside_the_safe_set_is_replaced(
    client: httpx.AsyncClient, forged: str
) -> None:
    response = await client.get("/stations/ST-1", headers={"X-Request-ID": forged.encode("utf-8")})
    assert response.headers["x-request-id"] == NEW_ID


async def test_one_access_line_per_request_with_its_fields(
    client: httpx.AsyncClient, records: list[logging.LogRecord]
) -> None:
    await client.get("/stations/ST-1?token=secret", headers={"X-Request-ID": "abc-123"})
    [line] = _access_lines(records)
    assert line.getMessage() == "GET /stations/ST-1 200"
    assert line.fields == {  # type: ignore[attr-defined]
        "method": "GET",
        "path": "/stations/ST-1",
        "route": "/stations/{station_id}",
        "status": 200,
        "duration_ms": 12.5,
        "client": "203.0.113.7",
    }
    assert line.request_id == "abc-123"  # type: ignore[attr-defined]


async def test_a_route_inside_a_mount_is_logged_with_its_whole_template(
    client: httpx.AsyncClient, records: list[logging.LogRecord]
) -> None:
    await client.get("/api/v1/stations/ST-1")
    [line] = _access_lines(records)
    assert line.fields["route"] == "/api/v1/stations/{station_id}"  # type: ignore[attr-defined]


async def test_a_path_no_route_serves_is_logged_without_a_route(
    client: httpx.AsyncClient, records: list[logging.LogRecord]
) -> None:
    await client.get("/nowhere")
    [line] = _access_lines(records)
    assert line.fields["status"] == 404 and "route" not in line.fields  # type: ignore[attr-defined]


async def test_the_request_id_is_on_a_line_logged_inside_the_handler(
    client: httpx.AsyncClient, records: list[logging.LogRecord]
) -> None:
    await client.get("/stations/ST-1", headers={"X-Request-ID": "abc-123"})
    [inside] = [r for r in records if r.getMessage() == "inside the handler"]
    assert inside.request_id == "abc-123"  # type: ignore[attr-defined]


async def test_a_line_logged_after_the_request_has_no_request_id(
    client: httpx.AsyncClient, records: list[logging.LogRecord]
) -> None:
    await client.get("/stations/ST-1")
    logging.getLogger("chargenet.test").info("after")
    [after] = [r for r in records if r.getMessage() == "after"]
    assert not hasattr(after, "request_id")


async def test_an_error_escaping_the_app_is_logged_as_500(records: list[logging.LogRecord]) -> None:
    transport = httpx.ASGITransport(app=_app(), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.get("/broken")
    [line] = _access_lines(records)
    assert response.status_code == 500 and line.fields["status"] == 500  # type: ignore[attr-defined]


async def test_when_disabled_no_line_is_logged_and_the_id_is_still_echoed(records: list[logging.LogRecord]) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=_app(enabled=False)), base_url="http://t") as client:
        response = await client.get("/stations/ST-1")
    assert response.headers["x-request-id"] == NEW_ID and _access_lines(records) == []


async def test_the_access_line_in_json_has_every_field_as_a_key(
    client: httpx.AsyncClient, records: list[logging.LogRecord]
) -> None:
    await client.get("/stations/ST-1", headers={"X-Request-ID": "abc-123"})
    [line] = _access_lines(records)
    entry = json.loads(JsonFormatter().format(line))
    assert {k: entry[k] for k in ("logger", "method", "route", "status", "client", "request_id")} == {
        "logger": "chargenet.access",
        "method": "GET",
        "route": "/stations/{station_id}",
        "status": 200,
        "client": "203.0.113.7",
        "request_id": "abc-123",
    }
