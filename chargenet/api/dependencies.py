"""The one way an API route reaches the process: `Context`, a typed FastAPI dependency."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from chargenet.context import AppContext


def app_context(request: Request) -> AppContext:
    """The context `create_api` was built with."""
    context = request.app.state.context
    assert isinstance(context, AppContext), "create_api sets the context"
    return context


Context = Annotated[AppContext, Depends(app_context)]
