"""The caller as the edge's use cases see it: `allowed(company_id, site_id)` for one scope, over the bearer check
that every API endpoint shares (`chargenet.api.security`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fastapi import Depends

from chargenet.api import security
from chargenet.auth.permissions import Permissions
from chargenet.auth.server import Caller
from chargenet.domain.scopes import Scope


@dataclass(frozen=True, slots=True)
class ScopedCaller:
    permissions: Permissions
    scope: Scope

    def allowed(self, company_id: str, site_id: str) -> bool:
        return self.permissions.allows(self.scope, company_id, site_id)


def require(scope: str) -> Callable[[Caller], Awaitable[ScopedCaller]]:
    wanted = Scope(scope)

    # A default rather than an Annotated hint: hints are strings here and could not see `wanted`.
    authenticated = Depends(security.require(wanted))

    async def dependency(caller: Caller = authenticated) -> ScopedCaller:
        return ScopedCaller(caller.permissions, wanted)

    return dependency
