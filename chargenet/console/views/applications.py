"""Applications (Configuration > Applications): list, create, enable and disable, rotate the secret, register the
public keys of private_key_jwt, set the rate limit, delete.

A client secret appears in exactly one answer, the one to the POST that made it (creation or rotation), which
is not a redirect target and is `no-store`: reloading, going back or opening the application again never shows
it. The audit record of each change names the application, never its secret.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.forms import address, page_of
from chargenet.console.pages import Signed, console_of, go_to, page, redirect, render, submitted, version_of
from chargenet.console.views import groups
from chargenet.domain.operators import Role
from chargenet.domain.rate_limits import DEFAULT_REQUESTS
from chargenet.errors import InvalidInput
from chargenet.keys import SecretHasher
from chargenet.services import applications

PAGE_SIZE = 50


def _hasher(request: Request) -> SecretHasher:
    hasher = console_of(request).secret_hasher
    assert hasher is not None, "the console was built without the secret hasher applications need"
    return hasher


async def _listing(request: Request, signed: Signed, **context: Any) -> Response:
    wanted, after = page_of(request, PAGE_SIZE)
    matching = request.query_params.get("find", "").strip()
    async with console_of(request).reading() as session:
        listed = await applications.list_applications(session, signed.caller, wanted, matching=matching or None)
    path = console_of(request).url("/applications")
    values = {
        "items": listed.items,
        "find": matching,
        "first_url": address(path, find=matching),
        "next_url": address(path, find=matching, after=listed.next) if listed.next else None,
        "after": after,
        "name": "",
        **context,
    }
    status = 422 if context.get("errors") else 200
    return render(request, "applications.html", values, status_code=status, signed=signed, active="applications")


async def _list(request: Request, signed: Signed) -> Response:
    return await _listing(request, signed)


async def _create(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    name = (await submitted(request)).get("name", "")
    try:
        async with console.transaction() as session:
            created = await applications.create_application(
                session, signed.caller, _hasher(request), name=name, now=console.clock.now()
            )
    except InvalidInput as error:
        return await _listing(request, signed, name=name, errors={"name": error.detail})
    return _secret_page(request, signed, created, name=name.strip(), rotated=False)


async def _show(request: Request, signed: Signed) -> Response:
    return await _application_page(request, signed)


async def _application_page(
    request: Request,
    signed: Signed,
    *,
    keys_form: dict[str, str] | None = None,
    limit_form: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
) -> Response:
    async with console_of(request).reading() as session:
        shown = await applications.get_application(session, signed.caller, request.path_params["client_id"])
    own_limit = "" if shown.rate_limit is None else str(shown.rate_limit)
    context = {
        "app": shown,
        "keys_form": keys_form or {"jwks": "", "jwks_url": ""},
        "limit_form": limit_form or {"rate_limit": own_limit},
        "default_rate_limit": DEFAULT_REQUESTS,
        "errors": errors or {},
        **await groups.application_groups(request, signed, shown.client_id),
    }
    status = 422 if errors else 200
    return render(request, "application.html", context, status_code=status, signed=signed, active="applications")


# The use case names its fields as the API does; the form's are snake_case.
_KEY_FIELDS = {"jwks": "jwks", "jwksUrl": "jwks_url"}


async def _set_keys(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    client_id = request.path_params["client_id"]
    fields = await submitted(request)
    version = await version_of(request)
    form = {"jwks": fields.get("jwks", "").strip(), "jwks_url": fields.get("jwks_url", "").strip()}
    try:
        await applications.set_public_keys(
            console.transaction,
            signed.caller,
            client_id,
            jwks=form["jwks"] or None,
            jwks_url=form["jwks_url"] or None,
            now=console.clock.now(),
            allow_private=console.webhook_allow_private,
            expected_version=version,
        )
    except InvalidInput as error:
        field = _KEY_FIELDS.get(error.field or "", "jwks")
        return await _application_page(request, signed, keys_form=form, errors={field: error.detail})
    return redirect(console.url(f"/applications/{client_id}#keys"))


async def _set_rate_limit(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    client_id = request.path_params["client_id"]
    version = await version_of(request)
    form = {"rate_limit": (await submitted(request)).get("rate_limit", "").strip()}
    try:
        typed = form["rate_limit"]
        if typed and not (typed.isascii() and typed.isdigit() and len(typed) <= 9):
            raise InvalidInput("a whole number of requests a minute, or empty for the default", field="rateLimit")
        async with console.transaction() as session:
            await applications.set_rate_limit(
                session,
                signed.caller,
                client_id,
                requests=int(form["rate_limit"]) if form["rate_limit"] else None,
                now=console.clock.now(),
                expected_version=version,
            )
    except InvalidInput as error:
        return await _application_page(request, signed, limit_form=form, errors={"rate_limit": error.detail})
    return redirect(console.url(f"/applications/{client_id}#rate-limit"))


def _set_enabled(enabled: bool) -> Any:
    async def view(request: Request, signed: Signed) -> Response:
        console = console_of(request)
        client_id = request.path_params["client_id"]
        version = await version_of(request)
        async with console.transaction() as session:
            await applications.set_enabled(
                session, signed.caller, client_id, enabled=enabled, now=console.clock.now(), expected_version=version
            )
        return redirect(console.url(f"/applications/{client_id}"))

    return view


async def _rotate(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    client_id = request.path_params["client_id"]
    version = await version_of(request)
    async with console.transaction() as session:
        rotated = await applications.rotate_secret(
            session, signed.caller, _hasher(request), client_id, now=console.clock.now(), expected_version=version
        )
        shown = await applications.get_application(session, signed.caller, client_id)
    return _secret_page(request, signed, rotated, name=shown.name, rotated=True)


async def _delete(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    client_id = request.path_params["client_id"]
    version = await version_of(request)
    async with console.transaction() as session:
        await applications.delete_application(
            session, signed.caller, client_id, now=console.clock.now(), expected_version=version
        )
    return go_to(request, console.url("/applications"))


def _secret_page(
    request: Request, signed: Signed, credentials: applications.Credentials, *, name: str, rotated: bool
) -> Response:
    context = {"credentials": credentials, "name": name, "rotated": rotated}
    return render(request, "application_secret.html", context, signed=signed, active="applications")


def routes() -> list[Route]:
    admin = Role.ADMIN
    return [
        Route("/applications", page(_list), methods=["GET"]),
        Route("/applications", page(_create, role=admin), methods=["POST"]),
        Route("/applications/{client_id}", page(_show), methods=["GET"]),
        Route("/applications/{client_id}/disable", page(_set_enabled(False), role=admin), methods=["POST"]),
        Route("/applications/{client_id}/enable", page(_set_enabled(True), role=admin), methods=["POST"]),
        Route("/applications/{client_id}/rotate-secret", page(_rotate, role=admin), methods=["POST"]),
        Route("/applications/{client_id}/keys", page(_set_keys, role=admin), methods=["POST"]),
        Route("/applications/{client_id}/rate-limit", page(_set_rate_limit, role=admin), methods=["POST"]),
        Route("/applications/{client_id}/delete", page(_delete, role=admin), methods=["POST"]),
    ]
