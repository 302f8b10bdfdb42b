"""Operators (owners only): list, create, change a role, disable and enable."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.forms import address, page_of, version_of
from chargenet.console.pages import Signed, console_of, is_htmx, page, redirect, render, submitted
from chargenet.domain.operators import Role
from chargenet.errors import Conflict, EmailTaken, InvalidInput
from chargenet.services import operators

PAGE_SIZE = 50


async def _listing(request: Request, signed: Signed, **context: Any) -> Response:
    console = console_of(request)
    wanted, after = page_of(request, PAGE_SIZE)
    async with console.reading() as session:
        found = await operators.list_operators(session, signed.caller, wanted, company_id=signed.caller.company_id)
    values = {
        "page": found,
        "after": after,
        "next_url": address(console.url("/operators"), after=found.next) if found.next else None,
        "form": {"email": "", "role": Role.VIEWER.value},
        **context,
    }
    status = 422 if context.get("errors") else 200
    return render(request, "operators.html", values, status_code=status, signed=signed, active="operators")


async def _list(request: Request, signed: Signed) -> Response:
    return await _listing(request, signed)


async def _create(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    form = await submitted(request)
    kept = {"email": form.get("email", ""), "role": form.get("role", "")}
    try:
        if form.get("password", "") != form.get("password_again", ""):
            raise InvalidInput("the two passwords differ", field="password_again")
        created = await operators.create_operator(
            console.transaction,
            console.passwords,
            signed.caller,
            company_id=signed.caller.company_id,
            email=kept["email"],
            role=kept["role"],
            password=form.get("password", ""),
            now=console.clock.now(),
        )
    except (InvalidInput, EmailTaken) as error:
        return await _listing(request, signed, form=kept, errors={error.field or "email": error.detail})
    return redirect(console.url(f"/operators/{created.id}"))


async def _detail(request: Request, signed: Signed, **context: Any) -> Response:
    async with console_of(request).reading() as session:
        shown = await operators.get_operator(session, signed.caller, request.path_params["operator_id"])
    values = {"operator": shown, "error": None, **context}
    template = "_operator_status.html" if is_htmx(request) and "error" in context else "operator.html"
    status = 409 if context.get("error") else 200
    return render(request, template, values, status_code=status, signed=signed, active="operators")


async def _show(request: Request, signed: Signed) -> Response:
    return await _detail(request, signed)


async def _set_role(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    form = await submitted(request)
    operator_id = request.path_params["operator_id"]
    async with console.transaction() as session:
        await operators.set_role(
            session,
            signed.caller,
            operator_id,
            role=form.get("role", ""),
            now=console.clock.now(),
            expected_version=version_of(form),
        )
    return redirect(console.url(f"/operators/{operator_id}"))


def _set_enabled(enabled: bool) -> Any:
    async def view(request: Request, signed: Signed) -> Response:
        console = console_of(request)
        form = await submitted(request)
        operator_id = request.path_params["operator_id"]
        try:
            async with console.transaction() as session:
                changed = await operators.set_enabled(
                    session,
                    signed.caller,
                    operator_id,
                    enabled=enabled,
                    now=console.clock.now(),
                    expected_version=version_of(form),
                )
        except Conflict as error:
            if not is_htmx(request):
                raise
            return await _detail(request, signed, error=error.message)
        if is_htmx(request):
            return render(request, "_operator_status.html", {"operator": changed, "error": None}, signed=signed)
        return redirect(console.url(f"/operators/{operator_id}"))

    return view


def routes() -> list[Route]:
    owner = Role.OWNER
    return [
        Route("/operators", page(_list, role=owner), methods=["GET"]),
        Route("/operators", page(_create, role=owner), methods=["POST"]),
        Route("/operators/{operator_id}", page(_show, role=owner), methods=["GET"]),
        Route("/operators/{operator_id}/role", page(_set_role, role=owner), methods=["POST"]),
        Route("/operators/{operator_id}/disable", page(_set_enabled(False), role=owner), methods=["POST"]),
        Route("/operators/{operator_id}/enable", page(_set_enabled(True), role=owner), methods=["POST"]),
    ]
