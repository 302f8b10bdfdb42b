"""The permission seam the edge's routes are written against, until the bearer check from the auth part is
wired in: `require(scope)` returns a caller whose `allowed(company_id, site_id)` says whether the scope holds
there. The composition root sets `AppContext.access_check`; without one every request is refused with 401,
so an unwired API is closed, not open."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from fastapi import HTTPException, Request


class ScopedCaller(Protocol):
    def allowed(self, company_id: str, site_id: str) -> bool: ...


AccessCheck = Callable[[Request, str], Awaitable[ScopedCaller]]


def require(scope: str) -> Callable[[Request], Awaitable[ScopedCaller]]:
    async def dependency(request: Request) -> ScopedCaller:
        check: AccessCheck | None = request.app.state.context.access_check
        if check is None:
            raise HTTPException(401, "no bearer check is configured", headers={"WWW-Authenticate": "Bearer"})
        return await check(request, scope)

    return dependency
