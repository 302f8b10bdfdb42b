"""Who calls a use case: every function of `chargenet.services` that acts for someone takes one of these.

The use case answers for its caller's reach itself: an object of another company, or outside the caller's
groups, is `NotFound`, exactly as if it did not exist, whichever face (API, command line, console) asked.
- `ApiApplication`: a client application calling the API with an access token; its groups' grants decide.
- `LocalOperator`: whoever runs `chargenet admin` on a machine holding the store and its keys; reaches all.
- `OperatorCaller`: a person signed in to the console with a role in one company: the whole company, reading
  only for a viewer.
Each names itself for the audit log as an `Actor`: who, through which face, from which address.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from chargenet.auth.permissions import Permissions, Reach
from chargenet.domain.operators import Role
from chargenet.domain.scopes import Scope
from chargenet.errors import Forbidden


class Face(enum.StrEnum):
    CONSOLE = "console"
    CLI = "cli"
    API = "api"


@dataclass(frozen=True, slots=True)
class Actor:
    """A caller as the audit log names it: `who` is readable ("operator ana@example.org", "local operator",
    "application cid_..."); `address` is the client's IP address where there is one."""

    who: str
    face: Face
    address: str | None = None


@dataclass(frozen=True, slots=True)
class ApiApplication:
    client_id: str
    permissions: Permissions
    address: str | None = None  # the client's IP address, for the audit log

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

    @property
    def actor(self) -> Actor:
        return Actor(self.name, Face.API, self.address)


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

    @property
    def actor(self) -> Actor:
        return Actor(self.name, Face.CLI)


@dataclass(frozen=True, slots=True)
class OperatorCaller:
    """A signed-in operator acting in the console: one company, one role."""

    operator_id: str
    company_id: str
    email: str
    role: Role
    address: str | None = None  # the browser's IP address, for the audit log

    @property
    def may_change(self) -> bool:
        return self.role.includes(Role.ADMIN)

    @property
    def may_manage_operators(self) -> bool:
        return self.role is Role.OWNER

    def allows(self, scope: Scope, company_id: str, site_id: str | None = None) -> bool:
        return company_id == self.company_id and (self.may_change or scope.value.endswith(":read"))

    def reach(self, scope: Scope) -> Reach:
        companies = frozenset({self.company_id}) if self.allows(scope, self.company_id) else frozenset[str]()
        return Reach(companies, frozenset())

    @property
    def name(self) -> str:
        return f"operator {self.email}"

    @property
    def actor(self) -> Actor:
        return Actor(self.name, Face.CONSOLE, self.address)


Caller = ApiApplication | LocalOperator | OperatorCaller

OPERATOR = LocalOperator()


def refuse_viewer(caller: Caller, what: str) -> None:
    """A console viewer sees its company's objects but changes none: `Forbidden` (403) for one asking to, before
    any reach check could make it look like `NotFound`. Applications and the local operator are held to their
    grants by the use case itself."""
    if isinstance(caller, OperatorCaller) and not caller.may_change:
        raise Forbidden(f"{what} needs the admin role; you are a viewer")
