"""Sites: the tree company > site > station > charge point > connector, sites and stations created and edited,
and each site's local authorization list.

Credentials are write-only: a page says whether one is set, never what it is; a blank field keeps it and a
checkbox clears it. A station's AuthorizationKey that the console generates appears in exactly one answer, the
one to the POST that made it (not a redirect target, `no-store`), with a warning that it is not shown again.
Every change goes through `chargenet.services`, which checks the operator's role and writes the audit record;
an edit form carries the version it was rendered from, and a change made meanwhile by someone else is a 409
with the form kept as typed.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.forms import (
    address,
    field_errors,
    local_instant,
    optional_text,
    page_of,
    text,
    version_of,
    whole_number,
)
from chargenet.console.pages import Signed, console_of, go_to, page, redirect, render, submitted
from chargenet.domain.local_time import LocalTime
from chargenet.domain.operators import Role
from chargenet.domain.tenants import MAX_CONNECTORS_PER_CHARGE_POINT
from chargenet.errors import Conflict, InvalidInput, NotFound, StaleChange
from chargenet.ids import new_authorization_key
from chargenet.keys import CredentialCipher, SecretHasher
from chargenet.services import (
    charge_points,
    companies,
    localauth,
    meters,
    sites,
    stations,
    webhook_lanes,
    webhooks,
)
from chargenet.services.pages import PageRequest

SITES_PER_PAGE = 50
STATIONS_PER_PAGE = 20
SECTION_ROWS = 10  # the first meters and webhooks a site's page shows; the rest are a link away
TAGS_PER_PAGE = 50
MAX_CHARGE_POINTS = 64
UPSTREAM = (("", "With or without"), ("with", "With an upstream"), ("without", "Without an upstream"))
STATUSES = [status.value for status in localauth.LISTABLE_STATUSES]
DEFAULT_TOKEN_TYPE = "ISO14443"  # noqa: S105 (a token type, no secret): what a tag is unless said otherwise
KEY_CHOICES_NEW = (
    ("generate", "Generate a key (recommended): shown once, on the next page"),
    ("given", "Use the key typed below (16 to 40 characters)"),
    ("none", "No key: security profile 0, for closed networks only"),
)
KEY_CHOICES_EDIT = (
    ("keep", "Keep the current key"),
    ("generate", "Generate a new key: shown once, on the next page"),
    ("given", "Use the key typed below (16 to 40 characters)"),
    ("none", "Remove the key: security profile 0, for closed networks only"),
)

UPSTREAM_VERSION_CHOICES = (
    ("ocpp1.6", "OCPP 1.6J only"),
    ("ocpp2.0.1", "OCPP 2.0.1 only"),
    ("ocpp1.6,ocpp2.0.1", "Both"),
)

# The services' names for what they refuse, and the form fields they are.
SITE_FIELDS = {
    "name": "name",
    "upstream-url": "upstream_url",
    "upstream-password": "upstream_password",
    "upstreamOcppVersions": "upstream_ocpp_versions",
}
STATION_FIELDS = {
    "stationId": "station_id",
    "charge-points": "charge_points",
    "connectors": "connectors",
    "password": "password",
    "upstream-password": "station_upstream_password",
    "key": "key",
}
TAG_FIELDS = {
    "idTag": "id_tag",
    "parentIdTag": "parent_id_tag",
    "status": "status",
    "expires": "expires",
    "idTokenType": "id_token_type",
}


def cipher_of(request: Request) -> CredentialCipher:
    cipher = console_of(request).credential_cipher
    assert cipher is not None, "the console was built without the credential cipher sites need"
    return cipher


def hasher_of(request: Request) -> SecretHasher:
    hasher = console_of(request).secret_hasher
    assert hasher is not None, "the console was built without the secret hasher stations need"
    return hasher


# --- the list of sites ------------------------------------------------------------------------------------


async def _sites(request: Request, signed: Signed, *, status_code: int = 200, **context: Any) -> Response:
    console = console_of(request)
    name = request.query_params.get("name", "").strip()
    upstream = request.query_params.get("upstream", "")
    if upstream not in ("with", "without"):
        upstream = ""
    wanted, after = page_of(request, SITES_PER_PAGE)
    async with console.reading() as session:
        company = await companies.get_company(session, signed.caller, signed.caller.company_id)
        listed = await sites.list_sites(
            session,
            signed.caller,
            wanted,
            company_id=signed.caller.company_id,
            name_contains=name or None,
            upstream={"with": True, "without": False}.get(upstream),
        )
        counts = await stations.count_by_site(session, [site.id for site in listed.items])
    path = console.url("/sites")
    values = {
        "company": company,
        "items": listed.items,
        "counts": counts,
        "filters": {"name": name, "upstream": upstream},
        "upstream_choices": UPSTREAM,
        "after": after,
        "first_url": address(path, name=name, upstream=upstream),
        "next_url": address(path, name=name, upstream=upstream, after=listed.next) if listed.next else None,
        "form": {"name": "", "upstream_url": ""},
        **context,
    }
    return render(request, "sites.html", values, status_code=status_code, signed=signed, active="sites")


async def _list(request: Request, signed: Signed) -> Response:
    return await _sites(request, signed)


async def _create(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    form = await submitted(request)
    kept = {"name": form.get("name", ""), "upstream_url": form.get("upstream_url", "")}
    try:
        async with console.transaction() as session:
            created = await sites.create_site(
                session,
                signed.caller,
                cipher_of(request),
                company_id=signed.caller.company_id,
                name=kept["name"],
                now=console.clock.now(),
                upstream_url=optional_text(form, "upstream_url"),
                upstream_password=form.get("upstream_password") or None,
            )
    except InvalidInput as error:
        errors = field_errors(error, SITE_FIELDS, "name")
        return await _sites(request, signed, status_code=422, form=kept, errors=errors)
    return redirect(console.url(f"/sites/{created.id}"))


# --- one site: its stations (the tree), its settings, a new station ---------------------------------------


def _site_form(site: sites.SiteView) -> dict[str, Any]:
    return {
        "name": site.name,
        "upstream_url": site.upstream_url or "",
        "clear_upstream_password": False,
        "upstream_ocpp_versions": ",".join(sorted(site.upstream_ocpp_versions)),
    }


def _station_form() -> dict[str, Any]:
    return {"station_id": "", "charge_points": "1", "connectors": "", "key": "generate"}


async def _site_page(
    request: Request, signed: Signed, site_id: str, *, status_code: int = 200, **context: Any
) -> Response:
    console = console_of(request)
    wanted, after = page_of(request, STATIONS_PER_PAGE)
    async with console.reading() as session:
        site = await sites.get_site(session, signed.caller, site_id)
        company = await companies.get_company(session, signed.caller, site.company_id)
        listed = await stations.list_stations(session, signed.caller, wanted, site_id=site_id)
        points = await charge_points.charge_points_of_stations(
            session, signed.caller, console.stations, [station.id for station in listed.items]
        )
        contents = await sites.site_contents(session, signed.caller, site_id)
        site_meters = await meters.list_meters(session, signed.caller, PageRequest(SECTION_ROWS), site_id=site_id)
        site_webhooks = await webhooks.list_webhooks(session, signed.caller, PageRequest(SECTION_ROWS), site_id=site_id)
        levels = await webhook_lanes.health_levels(session, [webhook.id for webhook in site_webhooks.items])
    tree: dict[str, list[charge_points.ChargePointView]] = {station.id: [] for station in listed.items}
    for point in points:
        tree.setdefault(point.station_id, []).append(point)
    path = console.url(f"/sites/{site_id}")
    values = {
        "company": company,
        "site": site,
        "stations": listed.items,
        "tree": tree,
        "contents": contents,
        "meters": site_meters.items,
        "webhooks": site_webhooks.items,
        "levels": levels,
        "after": after,
        "first_url": path,
        "next_url": address(path, after=listed.next) if listed.next else None,
        "site_form": _site_form(site),
        "station_form": _station_form(),
        "version": site.version,  # an edit refused as stale saves, the next time, over what is now shown
        "key_choices": KEY_CHOICES_NEW,
        "upstream_version_choices": UPSTREAM_VERSION_CHOICES,
        "failed": None,
        "stale": None,
        "delete_error": None,
        **context,
    }
    return render(request, "site.html", values, status_code=status_code, signed=signed, active="sites")


async def _show(request: Request, signed: Signed) -> Response:
    return await _site_page(request, signed, request.path_params["site_id"])


async def _update(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    site_id = request.path_params["site_id"]
    form = await submitted(request)
    kept = {
        "name": form.get("name", ""),
        "upstream_url": form.get("upstream_url", ""),
        "clear_upstream_password": bool(form.get("clear_upstream_password")),
        "upstream_ocpp_versions": form.get("upstream_ocpp_versions", ""),
    }
    url = optional_text(form, "upstream_url")
    versions = kept["upstream_ocpp_versions"]
    password = form.get("upstream_password") or None
    try:
        if url is None and password is not None:
            raise InvalidInput("needs an upstream URL to be sent to", field="upstream-password")
        async with console.transaction() as session:
            await sites.update_site(
                session,
                signed.caller,
                cipher_of(request),
                site_id,
                now=console.clock.now(),
                name=form.get("name", ""),
                upstream_url=url,
                remove_upstream=url is None,
                upstream_password=password,
                clear_upstream_password=bool(kept["clear_upstream_password"]),
                upstream_ocpp_versions=str(versions).split(",") if versions else None,
                expected_version=version_of(form),
            )
    except InvalidInput as error:
        errors = field_errors(error, SITE_FIELDS, "name")
        return await _site_page(
            request, signed, site_id, status_code=422, site_form=kept, errors=errors, failed="site", **edited(form)
        )
    except StaleChange as error:
        return await _site_page(
            request, signed, site_id, status_code=409, site_form=kept, stale=error.message, failed="site"
        )
    return redirect(console.url(f"/sites/{site_id}"))


def edited(form: dict[str, str]) -> dict[str, int]:
    """A refused form is shown again with the version it was edited from, not a newer one."""
    version = version_of(form)
    return {} if version is None else {"version": version}


def key_choice(form: dict[str, str], choices: tuple[tuple[str, str], ...]) -> str:
    choice = form.get("key", "")
    if choice not in {value for value, _ in choices}:
        raise InvalidInput("choose one of the options", field="key")
    return choice


async def _create_station(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    site_id = request.path_params["site_id"]
    form = await submitted(request)
    kept = {
        "station_id": form.get("station_id", ""),
        "charge_points": form.get("charge_points", ""),
        "connectors": form.get("connectors", ""),
        "key": form.get("key", ""),
    }
    try:
        choice = key_choice(form, KEY_CHOICES_NEW)
        station_id = text(form, "station_id")
        if not station_id:
            raise InvalidInput("is required", field="station_id")
        count = whole_number(form, "charge_points", low=1, high=MAX_CHARGE_POINTS) or 1
        connectors = whole_number(form, "connectors", low=1, high=MAX_CONNECTORS_PER_CHARGE_POINT)
        key = {"generate": new_authorization_key(), "given": form.get("password", ""), "none": None}[choice]
        if choice == "given" and not key:
            raise InvalidInput("type the key, or choose another option", field="password")
        async with console.transaction() as session:
            created = await stations.create_station(
                session,
                signed.caller,
                hasher_of(request),
                cipher_of(request),
                site_id=site_id,
                station_id=station_id,
                now=console.clock.now(),
                password=key,
                upstream_password=form.get("station_upstream_password") or None,
                charge_points=count,
                connectors=connectors,
            )
    except InvalidInput as error:
        errors = field_errors(error, STATION_FIELDS, "station_id")
        return await _site_page(
            request, signed, site_id, status_code=422, station_form=kept, errors=errors, failed="station"
        )
    except Conflict as error:  # the station id, or one of its charge point ids, is taken
        errors = {"station_id": error.message}
        return await _site_page(
            request, signed, site_id, status_code=422, station_form=kept, errors=errors, failed="station"
        )
    if choice == "generate":
        return key_page(request, signed, created, key, created_now=True)
    return redirect(console.url(f"/stations/{created.id}"))


def key_page(
    request: Request, signed: Signed, station: stations.StationView, key: str | None, *, created_now: bool
) -> Response:
    context = {"station": station, "key": key, "created_now": created_now}
    return render(request, "station_key.html", context, signed=signed, active="sites")


# --- a site's local authorization list ---------------------------------------------------------------------


def _tag_filters(values: Any) -> dict[str, str]:
    status = values.get("status", "")
    return {"tag": values.get("tag", "").strip(), "status": status if status in STATUSES else ""}


def _tag_form(entry: localauth.LocalAuthView | None, reads_in: LocalTime) -> dict[str, str]:
    """The add-or-change form: blank, or filled with an entry of the list to edit (its expiry in the reader's
    zone, with its offset kept beside it when that wall-clock time happened twice)."""
    if entry is None:
        return {
            "id_tag": "",
            "status": "Accepted",
            "expires": "",
            "expires_offset": "",
            "parent_id_tag": "",
            "id_token_type": DEFAULT_TOKEN_TYPE,
        }
    expires = entry.expires_at
    shown = "" if expires is None else reads_in.wall(expires).field_value()
    offset = "" if expires is None else reads_in.wall(expires).offset_text
    parent = entry.parent_id_tag or ""
    return {
        "id_tag": entry.id_tag,
        "status": entry.status,
        "expires": shown,
        "expires_offset": offset,
        "parent_id_tag": parent,
        "id_token_type": entry.id_token_type,
    }


async def _local_list(
    request: Request,
    signed: Signed,
    site_id: str,
    *,
    status_code: int = 200,
    filters: dict[str, str] | None = None,
    editing: str | None = None,
    **context: Any,
) -> Response:
    """The list page; `editing` names a tag whose entry the form changes, carrying the entry's current version (an
    edit refused as stale saves, the next time, over what is now shown)."""
    console = console_of(request)
    filters = filters or _tag_filters(request.query_params)
    wanted, after = page_of(request, TAGS_PER_PAGE)
    editing = editing if editing is not None else request.query_params.get("edit") or None
    async with console.reading() as session:
        site = await sites.get_site(session, signed.caller, site_id)
        company = await companies.get_company(session, signed.caller, site.company_id)
        listed = await localauth.list_entries(
            session,
            signed.caller,
            wanted,
            site_id=site_id,
            status=filters["status"] or None,
            id_tag_contains=filters["tag"] or None,
        )
        entry = None
        if editing is not None:
            try:
                entry = await localauth.get_entry(session, signed.caller, site_id=site_id, id_tag=editing)
            except NotFound:  # removed meanwhile, or an edited address: the form adds it
                entry = None
    path = console.url(f"/sites/{site_id}/local-list")
    values = {
        "company": company,
        "site": site,
        "items": listed.items,
        "filters": filters,
        "statuses": STATUSES,
        "status_choices": [(status, status) for status in STATUSES],
        "type_choices": [(kind, kind) for kind in localauth.ID_TOKEN_TYPES],
        "here_label": "Local authorization list",
        "after": after,
        "first_url": address(path, **filters),
        "next_url": address(path, **filters, after=listed.next) if listed.next else None,
        "form": _tag_form(entry, signed.reads_in),
        "editing": entry,
        "version": entry.version if entry is not None else None,
        "stale": None,
        "message": None,
        **context,
    }
    return render(request, "local_list.html", values, status_code=status_code, signed=signed, active="sites")


async def _delete(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    site_id = request.path_params["site_id"]
    form = await submitted(request)
    try:
        async with console.transaction() as session:
            await sites.delete_site(
                session, signed.caller, site_id, now=console.clock.now(), expected_version=version_of(form)
            )
    except Conflict as error:  # it still holds something, or it changed meanwhile
        return await _site_page(request, signed, site_id, status_code=409, delete_error=error.message)
    return go_to(request, console.url("/sites"))


async def _show_local_list(request: Request, signed: Signed) -> Response:
    return await _local_list(request, signed, request.path_params["site_id"])


async def _add_tag(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    site_id = request.path_params["site_id"]
    form = await submitted(request)
    fields = ("id_tag", "status", "expires", "expires_offset", "parent_id_tag", "id_token_type")
    kept = {key: form.get(key, "") for key in fields}
    editing = kept["id_tag"].strip() if version_of(form) is not None else None
    try:
        id_tag = form.get("id_tag", "")
        if not id_tag.strip():
            raise InvalidInput("is required", field="id_tag")
        async with console.transaction() as session:
            await localauth.add_entry(
                session,
                signed.caller,
                site_id=site_id,
                id_tag=id_tag.strip(),
                now=console.clock.now(),
                status=kept["status"] or "Accepted",
                expires_at=local_instant(form, "expires", signed.reads_in),
                parent_id_tag=optional_text(form, "parent_id_tag"),
                expected_version=version_of(form),
                id_token_type=kept["id_token_type"] or DEFAULT_TOKEN_TYPE,
            )
    except InvalidInput as error:
        errors = field_errors(error, TAG_FIELDS, "id_tag")
        # A refused form is shown again with the version it was edited from, not a newer one.
        return await _local_list(
            request,
            signed,
            site_id,
            status_code=422,
            editing=editing,
            form=kept,
            errors=errors,
            version=version_of(form),
        )
    except StaleChange as error:
        # The entry's current values are in the list, filtered to it; the form keeps what was typed.
        return await _local_list(
            request,
            signed,
            site_id,
            status_code=409,
            filters={"tag": kept["id_tag"].strip(), "status": ""},
            editing=editing,
            form=kept,
            stale=error.message,
        )
    return redirect(address(console.url(f"/sites/{site_id}/local-list"), tag=id_tag.strip()))


def _tag_action(verb: str) -> Any:
    """Block, expire or accept a tag already on the list (keeping its expiry and parent), or remove it."""

    async def view(request: Request, signed: Signed) -> Response:
        console = console_of(request)
        site_id = request.path_params["site_id"]
        form = await submitted(request)
        id_tag = form.get("id_tag", "")
        back = _tag_filters(form)
        try:
            async with console.transaction() as session:
                if verb == "remove":
                    await localauth.remove_entry(
                        session,
                        signed.caller,
                        site_id=site_id,
                        id_tag=id_tag,
                        now=console.clock.now(),
                        expected_version=version_of(form),
                    )
                else:
                    entry = await localauth.get_entry(session, signed.caller, site_id=site_id, id_tag=id_tag)
                    await localauth.add_entry(
                        session,
                        signed.caller,
                        site_id=site_id,
                        id_tag=id_tag,
                        now=console.clock.now(),
                        status={"block": "Blocked", "expire": "Expired", "accept": "Accepted"}[verb],
                        expires_at=entry.expires_at,
                        parent_id_tag=entry.parent_id_tag,
                        expected_version=version_of(form),
                        id_token_type=entry.id_token_type,
                    )
        except StaleChange as error:
            undone = "Not removed" if verb == "remove" else "Not changed"
            message = f"{error.message}. {undone}: the list shows it as it is now."
            return await _local_list(request, signed, site_id, status_code=409, filters=back, message=message)
        # Back to the page of the list the operator was on, with its filters.
        return go_to(
            request, address(console.url(f"/sites/{site_id}/local-list"), **back, after=form.get("after") or None)
        )

    return view


def routes() -> list[Route]:
    admin = Role.ADMIN
    return [
        Route("/sites", page(_list), methods=["GET"]),
        Route("/sites", page(_create, role=admin), methods=["POST"]),
        Route("/sites/{site_id}", page(_show), methods=["GET"]),
        Route("/sites/{site_id}", page(_update, role=admin), methods=["POST"]),
        Route("/sites/{site_id}/stations", page(_create_station, role=admin), methods=["POST"]),
        Route("/sites/{site_id}/delete", page(_delete, role=admin), methods=["POST"]),
        Route("/sites/{site_id}/local-list", page(_show_local_list), methods=["GET"]),
        Route("/sites/{site_id}/local-list", page(_add_tag, role=admin), methods=["POST"]),
        *(
            Route(f"/sites/{{site_id}}/local-list/{verb}", page(_tag_action(verb), role=admin), methods=["POST"])
            for verb in ("block", "expire", "accept", "remove")
        ),
    ]
