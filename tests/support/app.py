"""chargenet's app in the test's own process: its context on a data folder of the test's, and an HTTP client
that calls the app over ASGI (no server, no port)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from chargenet.app import AppContext, create_app, open_context
from chargenet.clock import Clock
from chargenet.config import load_settings
from tests.support.templates import prepare_data_dir


@asynccontextmanager
async def app_context(tmp_path: Path, clock: Clock, **flags: object) -> AsyncIterator[AppContext]:
    """The context of a process with the settings `flags` and its data folder in `tmp_path` (its SQLite store
    there unless `flags` name a `database_url`); closed at the end."""
    if "database_url" not in flags:
        prepare_data_dir(tmp_path / "data")
    settings = load_settings({"data_dir": str(tmp_path / "data"), **flags}, environ={})
    context = await open_context(settings, clock=clock)
    try:
        yield context
    finally:
        await context.close()


@asynccontextmanager
async def asgi_client(context: AppContext, **transport: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the whole app (`create_app`) at http://test; `transport` as `httpx.ASGITransport` takes it."""
    app_transport = httpx.ASGITransport(app=create_app(context), **transport)
    async with httpx.AsyncClient(transport=app_transport, base_url="http://test") as client:
        yield client
