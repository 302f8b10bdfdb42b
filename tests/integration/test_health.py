"""`/health`, `/health/live` and `/health/ready` on the real app over ASGI, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url

from chargenet.app import AppContext, create_app
from chargenet.clock import ManualClock
from chargenet.keys.store import CREDENTIAL_KEY
from chargenet.observability.health import ComponentHealth, Level
from tests.conftest import drop_pg_database
from tests.support.app import app_context


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def context(database_url: str, tmp_path: Path, clock: ManualClock) -> AsyncIterator[AppContext]:
    async with app_context(tmp_path, clock, database_url=database_url) as context:
        yield context


def _client(app: httpx._transports.asgi._ASGIApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def _remove_store(context: AppContext) -> None:
    """The store goes away under the running process: its database dropped, or its file made unopenable."""
    await context.store.dispose()
    url = make_url(context.store.url)
    if context.store.dialect == "postgresql":
        await drop_pg_database(context.store.url)
        return
    database = Path(str(url.database))
    for path in database.parent.glob(database.name + "*"):
        path.unlink()
    database.mkdir()  # a folder where the file was: SQLite cannot open it


async def _aiosqlite_threads_ended() -> None:
    """aiosqlite ends the thread of a connection that failed to open a moment after the failure, by a call back into
    the loop: a test that ended first would have closed the loop under it."""
    threads = [t for t in threading.enumerate() if "_connection_worker_thread" in t.name]
    await asyncio.to_thread(lambda: [thread.join(5) for thread in threads])


async def test_live_answers_200_with_a_tiny_body(context: AppContext) -> None:
    async with _client(create_app(context)) as client:
        response = await client.get("/health/live")
    assert (response.status_code, response.json()) == (200, {"status": "live"})


async def test_ready_answers_200_while_the_store_answers_and_the_workers_run(context: AppContext) -> None:
    app = create_app(context)
    async with app.router.lifespan_context(app), _client(app) as client:
        response = await client.get("/health/ready")
    assert (response.status_code, response.json()) == (200, {"status": "ready"})


async def test_ready_is_503_naming_the_workers_before_they_are_started(context: AppContext) -> None:
    async with _client(create_app(context)) as client:
        response = await client.get("/health/ready")
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["checks"] == {"workers": "not_started"}


async def test_ready_is_503_naming_the_database_when_the_store_is_gone_while_live_stays_200(
    context: AppContext,
) -> None:
    # Without the lifespan: workers that meet the vanished store log its errors, which is not this test's subject.
    async with _client(create_app(context)) as client:
        await _remove_store(context)
        ready = await client.get("/health/ready")
        live = await client.get("/health/live")
        await _aiosqlite_threads_ended()
    assert ready.status_code == 503
    assert ready.headers["content-type"] == "application/problem+json"
    problem = ready.json()
    assert problem["title"] == "Not ready" and problem["status"] == 503
    assert problem["checks"]["database"] in {"database_error", "connection_refused"}
    assert str(context.settings.data_dir) not in ready.text and "unable to open" not in ready.text
    assert (live.status_code, live.json()) == (200, {"status": "live"})


async def test_ready_is_503_naming_the_keys_when_a_key_file_is_gone(context: AppContext) -> None:
    app = create_app(context)
    async with app.router.lifespan_context(app), _client(app) as client:
        (context.keys.directory / CREDENTIAL_KEY).unlink()
        response = await client.get("/health/ready")
    assert (response.status_code, response.json()["checks"]) == (503, {"keys": "keys_missing"})


async def test_health_names_the_kind_of_a_failed_database_not_its_text(context: AppContext) -> None:
    async with _client(create_app(context)) as client:
        await _remove_store(context)
        response = await client.get("/health")
        await _aiosqlite_threads_ended()
    [database] = [c for c in response.json()["components"] if c["name"] == "database"]
    assert response.status_code == 503
    assert database["status"] == "failing" and database["error"] in {"database_error", "connection_refused"}
    assert str(context.settings.data_dir) not in response.text


async def test_ready_probes_at_most_once_a_second_however_often_it_is_asked(context: AppContext) -> None:
    app = create_app(context, monotonic=(ticks := Ticks()))
    async with app.router.lifespan_context(app), _client(app) as client:
        await _ready(client, ticks)
        (context.keys.directory / CREDENTIAL_KEY).unlink()
        ticks.now += 1.0
        assert (await client.get("/health/ready")).status_code == 200  # the probe of a second ago
        ticks.now += 0.1
        response = await client.get("/health/ready")
    assert response.status_code == 503 and response.json()["checks"]["keys"] == "keys_missing"


async def _ready(client: httpx.AsyncClient, ticks: Ticks) -> None:
    """Until the process answers ready, one probe a second of the test's clock: on a machine busy enough, a first
    probe can outlast its bound while the store opens."""
    for _ in range(10):
        response = await client.get("/health/ready")
        if response.status_code == 200:
            return
        ticks.now += 1.1
    raise AssertionError(f"never ready: {response.json()}")


async def test_health_answers_from_a_document_at_most_two_seconds_old(context: AppContext) -> None:
    calls: list[None] = []

    async def counted() -> list[ComponentHealth]:
        calls.append(None)
        return [ComponentHealth("counted", Level.OK)]

    context.health_checks.append(counted)
    ticks = Ticks()
    async with _client(create_app(context, monotonic=ticks)) as client:
        first = await client.get("/health")
        ticks.now += 2.0
        await client.get("/health")
        fresh_enough = len(calls)
        ticks.now += 0.5
        await client.get("/health")
    assert first.status_code == 200 and first.json()["status"] == "ok"
    assert (fresh_enough, len(calls)) == (1, 2)
