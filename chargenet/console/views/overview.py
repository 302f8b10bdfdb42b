"""The overview: the company at a glance."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.pages import Signed, console_of, page, render
from chargenet.services import overview


async def _overview(request: Request, signed: Signed) -> Response:
    async with console_of(request).reading() as session:
        counts = await overview.company_counts(session, signed.caller.company_id)
    return render(request, "overview.html", {"counts": counts}, signed=signed, active="overview")


def routes() -> list[Route]:
    return [Route("/", page(_overview), methods=["GET"])]
