"""Groups: list (filtered by GET parameters, keyset pages), detail, create, edit (name, scopes, anchor), delete, and
membership from either side: the group's page adds and removes applications, an application's page adds it to
groups and takes it out of them.

Every change goes through `chargenet.services.groups`, which refuses a viewer, audits it and bumps the group's
version. The edit form carries the version it was rendered from: a group changed meanwhile answers 409 with the
form kept as typed, the current values shown above it, and the current version in the form, so saving again is a
deliberate choice to overwrite.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.forms import address, page_of
from chargenet.console.pages import Signed, console_of, go_to, page, redirect, render, submitted
from chargenet.domain.operators import Role
from chargenet.domain.scopes import Scope
from chargenet.errors import InvalidInput, StaleChange
from chargenet.services import groups
from chargenet.services.pages import PageRequest

PAGE_SIZE = 50
FILTERS = ("q", "grants", "at", "app")  # name contains, grants scope, anchored at, application in it


def _version(form: dict[str, str]) -> int | None:
    value = form.get("version", "")
    return int(value) if value.isdigit() else None


def _site_or_company(value: str) -> str | None:
    """The anchor a form chose: `company`, or a site id."""
    if not value:
        raise InvalidInput("choose the company or one of its sites", field="anchor")
    return None if value == groups.COMPANY_ANCHOR else value


async def _scopes(request: Request) -> list[str]:
    form = await request.form()
    return [value for value in form.getlist("scope") if isinstance(value, str)]


def _typed(form: dict[str, str], scopes: list[str]) -> dict[str, Any]:
    return {"name": form.get("name", ""), "anchor": form.get("anchor", ""), "scopes": scopes}


def _field_of(error: InvalidInput) -> str:
    # The services name a refused anchor's site `site`; the form calls it `anchor`.
    return {"site": "anchor", "company": "anchor"}.get(error.field or "", error.field or "name")


async def _listing(request: Request, signed: Signed, **context: Any) -> Response:
    params = {key: request.query_params.get(key, "").strip() for key in FILTERS}
    errors: dict[str, str] = dict(context.pop("errors", {}))
    scope = None
    if params["grants"]:
        try:
            scope = Scope(params["grants"])
        except ValueError:
            errors["grants"] = "is not a scope chargenet knows"
    where = groups.GroupFilter(
        name=params["q"] or None, scope=scope, anchor=params["at"] or None, member=params["app"] or None
    )
    wanted, after = page_of(request, PAGE_SIZE)
    console = console_of(request)
    async with console.reading() as session:
        listed = await groups.list_groups(session, signed.caller, wanted, where=where)
        sites = await groups.anchor_choices(session, signed.caller)
    values = {
        "items": listed.items,
        "next_after": listed.next,
        "after": after,
        "params": params,
        "query": [(key, value) for key, value in params.items() if value],
        "sites": sites,
        "site_names": {site.id: site.label for site in sites},
        "scopes": list(Scope),
        "form": {"name": "", "anchor": groups.COMPANY_ANCHOR, "scopes": []},
        "errors": errors,
        **context,
    }
    status = 422 if errors else 200
    return render(request, "groups.html", values, status_code=status, signed=signed, active="groups")


async def _list(request: Request, signed: Signed) -> Response:
    return await _listing(request, signed)


async def _create(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    form = await submitted(request)
    scopes = await _scopes(request)
    try:
        async with console.transaction() as session:
            created = await groups.create_group(
                session,
                signed.caller,
                name=form.get("name", ""),
                scopes=scopes,
                site_id=_site_or_company(form.get("anchor", "")),
                now=console.clock.now(),
            )
    except InvalidInput as error:
        return await _listing(request, signed, form=_typed(form, scopes), errors={_field_of(error): error.detail})
    return redirect(console.url(f"/groups/{created.id}"))


async def _detail(request: Request, signed: Signed, group_id: str, *, status: int = 200, **context: Any) -> Response:
    console = console_of(request)
    async with console.reading() as session:
        group = await groups.get_group(session, signed.caller, group_id)
        sites = await groups.anchor_choices(session, signed.caller)
        members_page, after = page_of(request, PAGE_SIZE)
        members = await groups.group_members(session, signed.caller, group_id, members_page)
        find = request.query_params.get("find", "")
        candidates = await groups.application_choices(session, signed.caller, not_in_group=group.id, matching=find)
    current = {
        "name": group.name,
        "anchor": group.site_id or groups.COMPANY_ANCHOR,
        "scopes": [scope.value for scope in group.scopes],
    }
    values = {
        "group": group,
        "sites": sites,
        "site_names": {site.id: site.label for site in sites},
        "scopes": list(Scope),
        "members": [(member.id, member.label) for member in members.items],
        "member_count": len(group.client_ids),
        "after": after,
        "first_url": f"{console.url(f'/groups/{group_id}')}#members",
        "next_url": address(console.url(f"/groups/{group_id}"), after=members.next, find=find) + "#members"
        if members.next
        else None,
        "candidates": candidates,
        "find": find,
        "form": current,
        "version": group.version,
        "message": None,
        "errors": {},
        **context,
    }
    return render(request, "group.html", values, status_code=status, signed=signed, active="groups")


async def _show(request: Request, signed: Signed) -> Response:
    return await _detail(request, signed, request.path_params["group_id"])


async def _update(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    group_id = request.path_params["group_id"]
    form = await submitted(request)
    scopes = await _scopes(request)
    typed = _typed(form, scopes)
    try:
        async with console.transaction() as session:
            await groups.update_group(
                session,
                signed.caller,
                group_id,
                now=console.clock.now(),
                name=form.get("name", ""),
                scopes=scopes,
                site_id=_site_or_company(form.get("anchor", "")),
                expected_version=_version(form),
            )
    except InvalidInput as error:
        errors = {_field_of(error): error.detail}
        return await _detail(request, signed, group_id, status=422, form=typed, errors=errors, version=_version(form))
    except StaleChange as error:
        message = f"{error.message}. The values above are the current ones; yours are kept in the form below."
        return await _detail(request, signed, group_id, status=409, form=typed, message=message)
    return redirect(console.url(f"/groups/{group_id}"))


async def _delete(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    group_id = request.path_params["group_id"]
    form = await submitted(request)
    try:
        async with console.transaction() as session:
            await groups.delete_group(
                session, signed.caller, group_id, now=console.clock.now(), expected_version=_version(form)
            )
    except StaleChange as error:
        return await _detail(request, signed, group_id, status=409, message=f"{error.message}. Not deleted.")
    return go_to(request, console.url("/groups"))


async def _add_member(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    group_id = request.path_params["group_id"]
    client_id = (await submitted(request)).get("client_id", "").strip()
    if not client_id:
        errors = {"client_id": "choose an application"}
        return await _detail(request, signed, group_id, status=422, errors=errors)
    async with console.transaction() as session:
        await groups.add_app(session, signed.caller, group_id, client_id, now=console.clock.now())
    return redirect(console.url(f"/groups/{group_id}#members"))


async def _remove_member(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    group_id, client_id = request.path_params["group_id"], request.path_params["client_id"]
    async with console.transaction() as session:
        await groups.remove_app(session, signed.caller, group_id, client_id, now=console.clock.now())
    return redirect(console.url(f"/groups/{group_id}#members"))


# --- the other side: an application's groups, shown on its page (views/applications.py) ------------------------


async def application_groups(request: Request, signed: Signed, client_id: str) -> dict[str, Any]:
    """What an application's page shows of its groups: the groups it is in, and those it could join."""
    console = console_of(request)
    find = request.query_params.get("find", "")
    async with console.reading() as session:
        joined = await groups.list_groups(
            session, signed.caller, PageRequest(groups.MAX_CHOICES), where=groups.GroupFilter(member=client_id)
        )
        choices = await groups.group_choices(session, signed.caller, for_app=client_id, matching=find)
        sites = await groups.anchor_choices(session, signed.caller)
    return {
        "app_groups": joined.items,
        "more_groups": joined.next is not None,
        "group_choices": choices,
        "find": find,
        "site_names": {site.id: site.label for site in sites},
    }


async def _join(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    client_id = request.path_params["client_id"]
    group_id = (await submitted(request)).get("group_id", "").strip()
    if not group_id:
        raise InvalidInput("choose a group", field="group_id")
    async with console.transaction() as session:
        await groups.add_app(session, signed.caller, group_id, client_id, now=console.clock.now())
    return redirect(console.url(f"/applications/{client_id}#groups"))


async def _leave(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    client_id, group_id = request.path_params["client_id"], request.path_params["group_id"]
    async with console.transaction() as session:
        await groups.remove_app(session, signed.caller, group_id, client_id, now=console.clock.now())
    return redirect(console.url(f"/applications/{client_id}#groups"))


def routes() -> list[Route]:
    admin = Role.ADMIN
    return [
        Route("/groups", page(_list), methods=["GET"]),
        Route("/groups", page(_create, role=admin), methods=["POST"]),
        Route("/groups/{group_id}", page(_show), methods=["GET"]),
        Route("/groups/{group_id}", page(_update, role=admin), methods=["POST"]),
        Route("/groups/{group_id}/delete", page(_delete, role=admin), methods=["POST"]),
        Route("/groups/{group_id}/members", page(_add_member, role=admin), methods=["POST"]),
        Route("/groups/{group_id}/members/{client_id}/remove", page(_remove_member, role=admin), methods=["POST"]),
        Route("/applications/{client_id}/groups", page(_join, role=admin), methods=["POST"]),
        Route("/applications/{client_id}/groups/{group_id}/remove", page(_leave, role=admin), methods=["POST"]),
    ]
