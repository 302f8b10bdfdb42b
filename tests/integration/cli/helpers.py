"""What the command line's tests share: a command's result, and the tenant most of them start from."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


Cli = Callable[..., Awaitable[Result]]  # the `cli` fixture: cli("admin", "site", "list", ...)


async def company_and_site(cli: Cli) -> tuple[str, str]:
    """Company "Acme" and its site "Depot", made with the command line: their ids."""
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()["id"]
    site = (await cli("admin", "site", "create", "--company", company, "Depot", "--json")).json()["id"]
    return str(company), str(site)
