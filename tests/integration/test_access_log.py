"""The access log and the request id on the real app over ASGI: on by default, off when the setting says so."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import httpx
import pytest

from chargenet.app import AppContext
from chargenet.clock import ManualClock
from chargenet.config import load_settings
from tests.support.app import app_context, asgi_client
from tests.support.logs import collected_logs


@pytest.fixture
async def context(tmp_path: Path, clock: ManualClock) -> AsyncIterator[AppContext]:
    # The middleware does not touch the store: SQLite alone is enough.
    async with app_context(tmp_path, clock) as context:
        yield context


def _client(context: AppContext) -> AbstractAsyncContextManager[httpx.AsyncClient]:
    return asgi_client(context, client=("198.51.100.4", 40000))


def _access_lines(records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    return [r for r in records if r.name == "chargenet.access"]


async def test_every_request_is_logged_with_the_template_of_its_api_route(context: AppContext) -> None:
    with collected_logs() as records:
        async with _client(context) as client:
            response = await client.get("/api/v1/sites/site_x", headers={"X-Request-ID": "req-1"})
    [line] = _access_lines(records)
    assert response.status_code == 401 and response.headers["x-request-id"] == "req-1"
    fields = line.fields  # type: ignore[attr-defined]
    assert (fields["method"], fields["path"], fields["route"], fields["status"], fields["client"]) == (
        "GET",
        "/api/v1/sites/site_x",
        "/api/v1/sites/{site_id}",
        401,
        "198.51.100.4",
    )
    assert line.request_id == "req-1" and fields["duration_ms"] >= 0  # type: ignore[attr-defined]


async def test_a_line_logged_while_answering_carries_the_request_id(context: AppContext) -> None:
    with collected_logs() as records:
        async with _client(context) as client:
            await client.get("/api/v1/sites", headers={"Authorization": "Bearer forged", "X-Request-ID": "req-2"})
    [refused] = [r for r in records if r.getMessage() == "access token refused"]
    assert refused.request_id == "req-2"  # type: ignore[attr-defined]


async def test_health_answers_echo_a_new_request_id_when_none_was_sent(context: AppContext) -> None:
    async with _client(context) as client:
        first = await client.get("/health/live")
        second = await client.get("/health/live")
    assert len(first.headers["x-request-id"]) == 36 and first.headers["x-request-id"] != second.headers["x-request-id"]


async def test_no_access_line_when_the_setting_turns_it_off(context: AppContext) -> None:
    context.settings = dataclasses.replace(context.settings, access_log=False)
    with collected_logs() as records:
        async with _client(context) as client:
            response = await client.get("/health/live")
    assert _access_lines(records) == [] and "x-request-id" in response.headers


def test_the_access_log_is_on_by_default_and_off_with_its_variable() -> None:
    assert load_settings({}, environ={}).access_log is True
    assert load_settings({}, environ={"CHARGENET_ACCESS_LOG": "0"}).access_log is False
    assert load_settings({"access_log": False}, environ={"CHARGENET_ACCESS_LOG": "1"}).access_log is False
