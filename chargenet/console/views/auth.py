"""Signing in and out, and changing one's own password."""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console import protection
from chargenet.console.pages import (
    Signed,
    client_address,
    console_of,
    page,
    redirect,
    render,
    resume,
    safe_next,
    submitted,
)
from chargenet.domain.operators import normalize_email
from chargenet.errors import InvalidCredentials, InvalidInput
from chargenet.services import console_sessions, operators

log = logging.getLogger(__name__)


async def login_form(request: Request) -> Response:
    console = console_of(request)
    if await resume(request) is not None:
        return redirect(console.url("/"))
    return render(request, "login.html", {"email": "", "next": request.query_params.get("next", ""), "failed": False})


async def login(request: Request) -> Response:
    console = console_of(request)
    # No session yet, so no CSRF token: the origin check (and SameSite) keep other sites from signing a
    # browser in to an account of their choosing.
    protection.check_origin(request.method, request.headers, console.origin)
    form = await submitted(request)
    email, password, target = form.get("email", ""), form.get("password", ""), form.get("next", "")
    try:
        account = normalize_email(email)
    except InvalidInput:
        account = email.strip().lower()
    address = client_address(request)
    now = console.clock.now()
    try:
        if console.limiter.retry_after(client_id=account, address=address, now=now) is not None:
            # Over the limit: the same work and the same answer as a wrong password, so the lock reveals nothing.
            await console.passwords.verify(None, password)
            raise InvalidCredentials()
        operator = await operators.sign_in(console.transaction, console.passwords, email=email, password=password)
    except InvalidCredentials:
        console.limiter.record_failure(client_id=account, address=address, now=now)
        log.info("console sign-in failed", extra={"fields": {"address": address}})
        return render(request, "login.html", {"email": email, "next": target, "failed": True}, status_code=401)
    async with console.transaction() as session:
        previous = request.cookies.get(protection.COOKIE_NAME)
        if previous:
            await console_sessions.end(session, previous)
        started = await console_sessions.start(session, operator, now=console.clock.now())
    response = redirect(safe_next(console, target))
    response.headers.append("set-cookie", console.cookies.set_cookie(started.token))
    return response


async def _logout(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    async with console.transaction() as session:
        await console_sessions.end(session, request.cookies[protection.COOKIE_NAME])
    if console.live is not None:
        console.live.end_session(signed.session_hash)  # its open live streams close now
    response = redirect(console.url("/login"))
    response.headers.append("set-cookie", console.cookies.clear_cookie())
    return response


async def _password_form(request: Request, signed: Signed) -> Response:
    return render(request, "password.html", {"done": False}, signed=signed, active="account")


async def _change_password(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    form = await submitted(request)
    new, again = form.get("new_password", ""), form.get("new_password_again", "")
    try:
        if new != again:
            raise InvalidInput("the two new passwords differ", field="new_password_again")
        await operators.change_own_password(
            console.transaction,
            console.passwords,
            signed.caller,
            current=form.get("current_password", ""),
            new=new,
            now=console.clock.now(),
            keep_session=signed.session_hash,
        )
    except InvalidInput as error:
        errors = {error.field or "new_password": error.detail}
        return render(
            request,
            "password.html",
            {"done": False, "errors": errors},
            status_code=422,
            signed=signed,
            active="account",
        )
    return render(request, "password.html", {"done": True}, signed=signed, active="account")


def routes() -> list[Route]:
    return [
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", page(_logout), methods=["POST"]),
        Route("/account/password", page(_password_form), methods=["GET"]),
        Route("/account/password", page(_change_password), methods=["POST"]),
    ]
