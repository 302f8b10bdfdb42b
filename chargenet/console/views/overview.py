"""The overview (the company at a glance) and the pages of part 2 that are not in the console yet."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.pages import Signed, console_of, page, render
from chargenet.services import overview

# Until their pages exist, each says which command does the same today.
NOT_YET = {
    "groups": ("Groups", "chargenet admin group list --company {company}"),
    "webhooks": ("Webhooks", "chargenet admin webhook list --site SITE_ID"),
}


async def _overview(request: Request, signed: Signed) -> Response:
    async with console_of(request).reading() as session:
        counts = await overview.company_counts(session, signed.caller.company_id)
    return render(request, "overview.html", {"counts": counts}, signed=signed, active="overview")


def _not_yet(key: str) -> Route:
    title, command = NOT_YET[key]

    async def view(request: Request, signed: Signed) -> Response:
        context = {"title": title, "command": command.format(company=signed.caller.company_id)}
        return render(request, "not_yet.html", context, signed=signed, active=key)

    return Route(f"/{key}", page(view), methods=["GET"])


def routes() -> list[Route]:
    return [Route("/", page(_overview), methods=["GET"]), *(_not_yet(key) for key in NOT_YET)]
