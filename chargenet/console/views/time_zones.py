"""The zone an operator reads times in: their own choice (any role), and their company's (owners only), on one
page. Both are IANA names of the tz database; an unknown name is the form's error, naming it."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.pages import Signed, console_of, page, redirect, render, submitted
from chargenet.domain.local_time import known_zones
from chargenet.domain.operators import Role
from chargenet.errors import InvalidInput
from chargenet.services import companies, operators

OWN_ERROR = "time_zone"
COMPANY_ERROR = "company_time_zone"


async def _page(request: Request, signed: Signed, *, status_code: int = 200, **context: Any) -> Response:
    console = console_of(request)
    async with console.reading() as session:
        zones = await operators.own_time_zones(session, signed.caller)
    values = {
        "zones": zones,
        "known": sorted(known_zones()),
        "now": console.clock.now(),
        "form": {"time_zone": zones.own or "", "company_time_zone": zones.company},
        "done": request.query_params.get("done", ""),
        "typed": {},
        **context,
    }
    return render(request, "time_zone.html", values, status_code=status_code, signed=signed, active="account")


async def _show(request: Request, signed: Signed) -> Response:
    return await _page(request, signed)


async def _set_own(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    form = await submitted(request)
    chosen = form.get("time_zone", "")
    try:
        async with console.transaction() as session:
            await operators.set_own_time_zone(session, signed.caller, time_zone=chosen, now=console.clock.now())
    except InvalidInput as error:
        return await _page(request, signed, status_code=422, errors={OWN_ERROR: error.detail}, typed={"own": chosen})
    return redirect(console.url("/account/time-zone?done=own"))


async def _set_company(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    form = await submitted(request)
    chosen = form.get("company_time_zone", "")
    try:
        async with console.transaction() as session:
            await companies.set_time_zone(
                session, signed.caller, signed.caller.company_id, time_zone=chosen, now=console.clock.now()
            )
    except InvalidInput as error:
        errors = {COMPANY_ERROR: error.detail}
        return await _page(request, signed, status_code=422, errors=errors, typed={"company": chosen})
    return redirect(console.url("/account/time-zone?done=company"))


def routes() -> list[Route]:
    return [
        Route("/account/time-zone", page(_show), methods=["GET"]),
        Route("/account/time-zone", page(_set_own), methods=["POST"]),
        Route("/account/company-time-zone", page(_set_company, role=Role.OWNER), methods=["POST"]),
    ]
