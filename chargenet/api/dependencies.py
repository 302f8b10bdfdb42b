"""The one way an API route reaches the process: `Context`, a typed FastAPI dependency."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from chargenet.context import AppContext
from chargenet.services.directory import ChargePointDirectory


async def app_context(request: Request) -> AppContext:
    """The context `create_api` was built with.

    A coroutine, as every dependency here: FastAPI runs a plain function in its thread pool, a hand-off to
    another thread and back on every request for what is an attribute lookup."""
    context = request.app.state.context
    assert isinstance(context, AppContext), "create_api sets the context"
    return context


Context = Annotated[AppContext, Depends(app_context)]


async def charge_point_directory(request: Request) -> ChargePointDirectory | None:
    """The process's charge point directory (`services.directory`), when `create_api` was given one."""
    directory = getattr(request.app.state, "directory", None)
    assert directory is None or isinstance(directory, ChargePointDirectory)
    return directory


Directory = Annotated[ChargePointDirectory | None, Depends(charge_point_directory)]
