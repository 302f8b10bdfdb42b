"""Who calls a use case: every function of `chargenet.services` that acts for someone takes one of these.

The use case answers for its caller's reach itself: an object of another company, or outside the caller's
groups, is `NotFound`, exactly as if it did not exist, whichever face (API, command line, console) asked.
- `ApiApplication`: a client application calling the API with an access token; its groups' grants decide.
- `LocalOperator`: whoever runs `chargenet admin` on a machine holding the store and its keys; reaches all.
The console's operator (a person with a role in one company) will be a third kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from chargenet.auth.permissions import Permissions, Reach
from chargenet.domain.scopes import Scope


@dataclass(frozen=True, slots=True)
class ApiApplication:
    client_id: str
    permissions: Permissions

    @property
    def company_id(self) -> str | None:
        return self.permissions.company_id

    def allows(self, scope: Scope, company_id: str, site_id: str | None = None) -> bool:
        """Whether `scope` holds on the node (company_id, site_id); `site_id=None` is the company itself."""
        return self.permissions.allows(scope, company_id, site_id)

    def reach(self, scope: Scope) -> Reach:
        return self.permissions.reach(scope)

    @property
    def name(self) -> str:
        return f"application {self.client_id}"


@dataclass(frozen=True, slots=True)
class LocalOperator:
    """The store's operator: the command line on the server's machine, which holds the keys anyway."""

    @property
    def company_id(self) -> str | None:
        return None

    def allows(self, scope: Scope, company_id: str, site_id: str | None = None) -> bool:
        return True

    def reach(self, scope: Scope) -> Reach:
        return Reach(frozenset(), frozenset(), everything=True)

    @property
    def name(self) -> str:
        return "local operator"


Caller = ApiApplication | LocalOperator

OPERATOR = LocalOperator()
