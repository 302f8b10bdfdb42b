"""Webhooks per site: list (filtered by GET parameters, keyset pages), create, detail with its lanes' health, edit,
enable and disable, delete, send a test event, the delivery log, and the dead letters (their count, then the list,
replay one or all).

Credentials are write-only: no page ever holds one. The edit form says which fields are set; a field left blank
keeps the stored value, one typed replaces it. Everything a partner supplies (URLs, response bodies, errors) is
text to Jinja's autoescape. Every change goes through the webhook use cases (`chargenet.services.webhooks` and its
`webhook_*` siblings), which refuse a viewer, audit it and bump the webhook's version; forms carry the version
they were rendered from, so an edit made over someone else's answers 409 with the form kept as typed.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.forms import local_instant, numbered, page_of
from chargenet.console.pages import Signed, console_of, go_to, is_htmx, page, redirect, render
from chargenet.domain.events import WEBHOOK_TEST, EventType
from chargenet.domain.operators import Role
from chargenet.domain.webhook_headers import parse_header_line
from chargenet.errors import Conflict, InvalidInput, NotFound, StaleChange
from chargenet.keys import CredentialCipher
from chargenet.services import (
    webhook_dead_letters,
    webhook_deliveries,
    webhook_lanes,
    webhook_recovery,
    webhook_rotation,
    webhook_test_events,
    webhooks,
)
from chargenet.services.pages import PageRequest
from chargenet.webhooks import health
from chargenet.webhooks.outbound_auth import AuthType, TokenAuthMethod
from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat

PAGE_SIZE = 50
LOG_PAGE_SIZE = 50
RECENT_ATTEMPTS = 10
LIST_FILTERS = ("site", "status", "event", "health")
# A lane at this level or worse (the overview links here with these).
HEALTH_CHOICES = {"alert": health.Level.ALERT, "critical": health.Level.CRITICAL}
LOG_FILTERS = ("event_type", "outcome", "event_id")
CREDENTIALS = ("username", "password", "token", "token_url", "client_id", "client_secret", "token_scope")
SECRETS = ("password", "token", "client_secret")

# What the services call a refused field, and what the form calls it.
_FORM_FIELDS = {
    "events": "events",
    "tokenUrl": "token_url",
    "scope": "token_scope",
    "site": "site_id",
    "chargePoints": "charge_points",
    "overlapUntil": "overlap_until",
}
CARE_FIELDS = ("stations", "charge_points", "headers")


def _cipher(request: Request) -> CredentialCipher:
    cipher = console_of(request).credential_cipher
    assert cipher is not None, "the console was built without the credential cipher webhooks need"
    return cipher


def _version(form: dict[str, str]) -> int | None:
    value = form.get("version", "")
    return int(value) if value.isdigit() else None


def _field_of(error: InvalidInput) -> str:
    field = error.field or "url"
    return _FORM_FIELDS.get(field, field)


async def _form(request: Request) -> tuple[dict[str, str], list[str]]:
    """The form's single fields (last value of each) and its event types (a checkbox group)."""
    data: FormData = await request.form()
    fields = {key: value for key, value in data.items() if isinstance(value, str)}
    return fields, [value for value in data.getlist("events") if isinstance(value, str)]


def _choice(value: str, allowed: type[Any], field: str) -> Any:
    try:
        return allowed(value)
    except ValueError:
        raise InvalidInput(f"{value!r} is not one of {', '.join(v.value for v in allowed)}", field=field) from None


def _format(fields: dict[str, str]) -> SignatureFormat:
    chosen: SignatureFormat = _choice(fields.get("signature_format", "rfc9421"), SignatureFormat, "signature_format")
    return chosen


def _auth_form(fields: dict[str, str]) -> webhooks.AuthForm:
    return webhooks.AuthForm(
        type=_choice(fields.get("auth", "none"), AuthType, "auth"),
        username=fields.get("username", ""),
        password=fields.get("password", ""),
        token=fields.get("token", ""),
        token_url=fields.get("token_url", ""),
        client_id=fields.get("client_id", ""),
        client_secret=fields.get("client_secret", ""),
        token_scope=fields.get("token_scope", ""),
        token_auth_method=_choice(fields.get("token_auth_method", "basic"), TokenAuthMethod, "token_auth_method"),
        clear_scope=fields.get("clear_scope") == "1",
    )


def _ids(text: str) -> list[str]:
    return [part for part in text.replace(",", " ").split() if part]


def _care(fields: dict[str, str]) -> dict[str, Any]:
    """The filter and the custom headers as the use cases take them; a header line without a colon is refused."""
    lines = [line for line in fields.get("headers", "").splitlines() if line.strip()]
    return {
        "headers": [parse_header_line(line) for line in lines],
        "stations": _ids(fields.get("stations", "")),
        "charge_points": _ids(fields.get("charge_points", "")),
    }


def _care_shown(webhook: webhooks.WebhookView) -> dict[str, str]:
    return {
        "stations": ", ".join(webhook.stations),
        "charge_points": ", ".join(webhook.charge_points),
        "headers": "\n".join(f"{name}: {value}" for name, value in webhook.headers.items()),
    }


def _typed(fields: dict[str, str], events: list[str]) -> dict[str, Any]:
    """The form as typed, to show it again: every field but the secrets, which a page never holds."""
    kept = {name: fields.get(name, "") for name in ("site_id", "url", "auth", "alg", "signature_format", *CARE_FIELDS)}
    kept |= {name: fields.get(name, "") for name in CREDENTIALS if name not in SECRETS}
    return kept | {"events": events, "token_auth_method": fields.get("token_auth_method", "basic")}


def _empty_form(site_id: str = "") -> dict[str, Any]:
    return {
        "site_id": site_id,
        "url": "",
        "events": [],
        "auth": AuthType.NONE.value,
        "alg": SignatureAlgorithm.ED25519.value,
        "signature_format": SignatureFormat.RFC9421.value,
        "token_auth_method": TokenAuthMethod.BASIC.value,
    } | {name: "" for name in (*CREDENTIALS, *CARE_FIELDS) if name not in SECRETS}


def _choices() -> dict[str, Any]:
    return {
        "event_types": [t.value for t in EventType],
        "auth_types": [a.value for a in AuthType],
        "algorithms": [a.value for a in SignatureAlgorithm],
        "formats": [f.value for f in SignatureFormat],
        "token_auth_methods": [m.value for m in TokenAuthMethod],
    }


# --- list and create ---------------------------------------------------------------------------------------------


async def _listing(request: Request, signed: Signed, *, status: int = 200, **context: Any) -> Response:
    params = {key: request.query_params.get(key, "").strip() for key in LIST_FILTERS}
    enabled = {"enabled": True, "disabled": False}.get(params["status"])
    event_type = params["event"] if params["event"] in set(EventType) else None
    wanted, after = page_of(request, PAGE_SIZE)
    async with console_of(request).reading() as session:
        sites = await webhooks.site_choices(session, signed.caller)
        # A site named in the address (the site page's "New webhook") pre-fills the form if the operator reaches
        # it, even past the choices' limit; any other id is not pre-filled, and says nothing about it.
        chosen = await webhooks.site_choice(session, signed.caller, params["site"])
        if chosen is not None and chosen not in sites:
            sites = [*sites, chosen]
        listed = await webhooks.list_webhooks(
            session,
            signed.caller,
            wanted,
            site_id=params["site"] or None,
            enabled=enabled,
            event_type=event_type,
            level=HEALTH_CHOICES.get(params["health"]),
        )
        levels = await webhook_lanes.health_levels(session, [view.id for view in listed.items])
    values = {
        "items": listed.items,
        "levels": levels,
        "next_after": listed.next,
        "after": after,
        "params": params,
        "query": [(key, value) for key, value in params.items() if value],
        "sites": sites,
        "site_names": dict(sites),
        "form": _empty_form(chosen[0] if chosen is not None else ""),
        "errors": {},
        **_choices(),
        **context,
    }
    return render(request, "webhooks.html", values, status_code=status, signed=signed, active="webhooks")


async def _list(request: Request, signed: Signed) -> Response:
    return await _listing(request, signed)


async def _create(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    fields, events = await _form(request)
    try:
        if not fields.get("site_id"):
            raise InvalidInput("choose the site whose events it receives", field="site_id")
        created = await webhooks.create_webhook(
            console.transaction,
            signed.caller,
            _cipher(request),
            site_id=fields["site_id"],
            url=fields.get("url", "").strip(),
            event_types=events,
            auth=_auth_form(fields),
            algorithm=_choice(fields.get("alg", "ed25519"), SignatureAlgorithm, "alg"),
            signature_format=_format(fields),
            **_care(fields),
            now=console.clock.now(),
            allow_private=console.webhook_allow_private,
        )
    except (InvalidInput, NotFound) as error:
        field = _field_of(error) if isinstance(error, InvalidInput) else "site_id"
        detail = error.detail if isinstance(error, InvalidInput) else "is not a site of this company"
        return await _listing(request, signed, status=422, form=_typed(fields, events), errors={field: detail})
    return redirect(console.url(f"/webhooks/{created.id}"))


# --- detail, health, test event ------------------------------------------------------------------------------------


async def _detail(request: Request, signed: Signed, webhook_id: str, *, status: int = 200, **context: Any) -> Response:
    console = console_of(request)
    async with console.reading() as session:
        webhook = await webhooks.get_webhook(session, signed.caller, webhook_id)
        dead = await webhook_dead_letters.count_dead_letters(session, signed.caller, webhook_id)
        recent = await webhook_deliveries.list_deliveries(
            session, signed.caller, webhook_id, PageRequest(RECENT_ATTEMPTS)
        )
        sites = dict(await webhooks.site_choices(session, signed.caller))
    tested = None
    wanted = request.query_params.get("tested", "")
    if wanted.isdigit():
        tested = next((attempt for attempt in recent.items if attempt.id == int(wanted)), None)
    values = {
        "webhook": webhook,
        "site_name": sites.get(webhook.site_id, webhook.site_id),
        "dead_letters": dead,
        "recent": recent.items,
        "more_attempts": recent.next is not None,
        "tested": tested,
        "thresholds": webhook_lanes.THRESHOLDS,
        "message": None,
        "notice": _care_notice(request),
        "retention_days": console_of(request).event_retention_days,
        "errors": {},
        **context,
        # The recovery and rotation forms as typed (after a refusal) over their blank state.
        "care": _CARE_FORMS | context.get("care", {}),
    }
    return render(request, "webhook.html", values, status_code=status, signed=signed, active="webhooks")


_CARE_FORMS = {"since": "", "until": "", "overlap_until": "", "auth": AuthType.TOKEN.value, "username": ""}


def _care_notice(request: Request) -> str | None:
    """What the page says after a recovery or a rotation redirected to it."""
    recovered = request.query_params.get("recovered", "")
    if recovered.isdigit():
        return f"{recovered} event(s) recovered: they join the tail of their lanes, in their original order."
    if request.query_params.get("rotated") == "1":
        return "The new credentials are in use; the previous ones are tried after a 401 or 403 until the overlap ends."
    return None


async def _show(request: Request, signed: Signed) -> Response:
    return await _detail(request, signed, request.path_params["webhook_id"])


async def _health(request: Request, signed: Signed) -> Response:
    """The lanes' health alone, for the detail page to refresh in place (htmx polling)."""
    async with console_of(request).reading() as session:
        webhook = await webhooks.get_webhook(session, signed.caller, request.path_params["webhook_id"])
    values = {"webhook": webhook, "thresholds": webhook_lanes.THRESHOLDS}
    return render(request, "_webhook_health.html", values, signed=signed)


async def _test(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    webhook_id = request.path_params["webhook_id"]
    try:
        attempt = await webhook_test_events.send_test_event(
            console.transaction, signed.caller, console.webhook_tests, webhook_id, clock=console.clock
        )
    except Conflict as error:
        return await _detail(request, signed, webhook_id, status=409, message=error.message)
    return go_to(request, console.url(f"/webhooks/{webhook_id}?tested={attempt.id}#test"))


# --- recovery of a time window, credential rotation ----------------------------------------------------------------


async def _recover(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    webhook_id = request.path_params["webhook_id"]
    fields, _ = await _form(request)
    typed = {"since": fields.get("since", ""), "until": fields.get("until", "")}
    try:
        since = local_instant(fields, "since", signed.reads_in)
        until = local_instant(fields, "until", signed.reads_in)
        if since is None or until is None:
            raise InvalidInput("give the window's start and end", field="since" if since is None else "until")
        async with console.transaction() as session:
            recovered = await webhook_recovery.recover_window(
                session,
                signed.caller,
                webhook_id,
                since=since,
                until=until,
                now=console.clock.now(),
                retention=timedelta(days=console.event_retention_days),
            )
    except InvalidInput as error:
        errors = {_field_of(error): error.detail}
        return await _detail(request, signed, webhook_id, status=422, errors=errors, care=typed)
    except Conflict as error:
        return await _detail(
            request, signed, webhook_id, status=409, message=f"Nothing was recovered: {error.message}."
        )
    return redirect(console.url(f"/webhooks/{webhook_id}?recovered={recovered.events}#recover"))


async def _rotate(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    webhook_id = request.path_params["webhook_id"]
    fields, _ = await _form(request)
    typed = {
        "overlap_until": fields.get("overlap_until", ""),
        "auth": fields.get("auth", ""),
        "username": fields.get("username", ""),
    }
    try:
        overlap_until = local_instant(fields, "overlap_until", signed.reads_in)
        if overlap_until is None:
            raise InvalidInput("say until when the previous credentials are kept", field="overlap_until")
        await webhook_rotation.rotate_credentials(
            console.transaction,
            signed.caller,
            _cipher(request),
            webhook_id,
            webhooks.auth_from_form(_auth_form(fields)),
            overlap_until=overlap_until,
            now=console.clock.now(),
            allow_private=console.webhook_allow_private,
            expected_version=_version(fields),
        )
    except InvalidInput as error:
        errors = {_field_of(error): error.detail}
        return await _detail(request, signed, webhook_id, status=422, errors=errors, care=typed)
    except (Conflict, StaleChange) as error:
        message = f"Nothing was rotated: {error.message}."
        return await _detail(request, signed, webhook_id, status=409, message=message)
    return redirect(console.url(f"/webhooks/{webhook_id}?rotated=1#rotate"))


# --- edit, enable, disable, delete ---------------------------------------------------------------------------------


async def _edit_page(
    request: Request, signed: Signed, webhook_id: str, *, status: int = 200, **context: Any
) -> Response:
    async with console_of(request).reading() as session:
        webhook = await webhooks.get_webhook(session, signed.caller, webhook_id)
        summary = await webhooks.auth_summary(session, signed.caller, _cipher(request), webhook_id)
        sites = dict(await webhooks.site_choices(session, signed.caller))
    stored = (
        _empty_form(webhook.site_id)
        | {
            "url": webhook.url,
            "events": webhook.event_types,
            "auth": webhook.auth_type,
            "alg": webhook.signature_algorithm,
            "signature_format": webhook.signature_format,
            "token_auth_method": summary.token_auth_method.value,
        }
        | _care_shown(webhook)
    )
    values = {
        "webhook": webhook,
        "site_name": sites.get(webhook.site_id, webhook.site_id),
        "summary": summary,
        "form": stored,
        "version": webhook.version,
        "errors": {},
        "message": None,
        **_choices(),
        **context,
    }
    return render(request, "webhook_edit.html", values, status_code=status, signed=signed, active="webhooks")


async def _edit(request: Request, signed: Signed) -> Response:
    return await _edit_page(request, signed, request.path_params["webhook_id"])


async def _update(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    webhook_id = request.path_params["webhook_id"]
    fields, events = await _form(request)
    typed = _typed(fields, events)
    try:
        await webhooks.update_webhook(
            console.transaction,
            signed.caller,
            _cipher(request),
            webhook_id,
            now=console.clock.now(),
            allow_private=console.webhook_allow_private,
            url=fields.get("url", "").strip(),
            event_types=events,
            auth=_auth_form(fields),
            algorithm=_choice(fields.get("alg", "ed25519"), SignatureAlgorithm, "alg"),
            signature_format=_format(fields),
            **_care(fields),
            expected_version=_version(fields),
        )
    except InvalidInput as error:
        errors = {_field_of(error): error.detail}
        return await _edit_page(
            request, signed, webhook_id, status=422, form=typed, errors=errors, version=_version(fields)
        )
    except StaleChange as error:
        message = (
            f"{error.message}. Nothing was saved. The settings above are the current ones; your changes are kept in "
            "the form (retype any credential), and saving again replaces the current settings."
        )
        return await _edit_page(request, signed, webhook_id, status=409, form=typed, message=message)
    return redirect(console.url(f"/webhooks/{webhook_id}"))


def _set_enabled(enabled: bool) -> Any:
    async def view(request: Request, signed: Signed) -> Response:
        console = console_of(request)
        webhook_id = request.path_params["webhook_id"]
        fields, _ = await _form(request)
        try:
            async with console.transaction() as session:
                await webhooks.set_enabled(
                    session,
                    signed.caller,
                    webhook_id,
                    enabled,
                    now=console.clock.now(),
                    expected_version=_version(fields),
                )
        except StaleChange as error:
            message = f"{error.message}. Nothing was changed; the page shows the current settings."
            return await _detail(request, signed, webhook_id, status=409, message=message)
        return redirect(console.url(f"/webhooks/{webhook_id}"))

    return view


async def _delete(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    webhook_id = request.path_params["webhook_id"]
    fields, _ = await _form(request)
    try:
        async with console.transaction() as session:
            await webhooks.delete_webhook(
                session, signed.caller, webhook_id, now=console.clock.now(), expected_version=_version(fields)
            )
    except StaleChange as error:
        message = f"{error.message}. It was not deleted; the page shows the current settings."
        return await _detail(request, signed, webhook_id, status=409, message=message)
    return go_to(request, console.url("/webhooks"))


# --- the delivery log --------------------------------------------------------------------------------------------


async def _deliveries(request: Request, signed: Signed) -> Response:
    webhook_id = request.path_params["webhook_id"]
    params = {key: request.query_params.get(key, "").strip() for key in LOG_FILTERS}
    where = webhook_deliveries.DeliveryFilter(
        event_type=params["event_type"] or None,
        event_id=params["event_id"] or None,
        delivered={"delivered": True, "failed": False}.get(params["outcome"]),
    )
    before = request.query_params.get("before", "")
    wanted = PageRequest(LOG_PAGE_SIZE, before if numbered(before) else None)
    async with console_of(request).reading() as session:
        webhook = await webhooks.get_webhook(session, signed.caller, webhook_id)
        listed = await webhook_deliveries.list_deliveries(session, signed.caller, webhook_id, wanted, where=where)
    last = listed.items[-1].id if listed.next and listed.items else None
    values = {
        "webhook": webhook,
        "attempts": listed.items,
        "next_before": last,
        "before": wanted.after,
        "params": params,
        "query": [(key, value) for key, value in params.items() if value],
        "event_types": [t.value for t in EventType] + [WEBHOOK_TEST],
    }
    return render(request, "webhook_deliveries.html", values, signed=signed, active="webhooks")


# --- dead letters -------------------------------------------------------------------------------------------------


async def _dead_letters(request: Request, signed: Signed, *, status: int = 200, **context: Any) -> Response:
    webhook_id = request.path_params["webhook_id"]
    after = request.query_params.get("after", "")
    include_replayed = request.query_params.get("include") == "all"
    wanted = PageRequest(PAGE_SIZE, after if numbered(after) else None)
    async with console_of(request).reading() as session:
        webhook = await webhooks.get_webhook(session, signed.caller, webhook_id)
        waiting = await webhook_dead_letters.count_dead_letters(session, signed.caller, webhook_id)
        listed = await webhook_dead_letters.list_dead_letters(
            session, signed.caller, webhook_id, wanted, include_replayed=include_replayed
        )
    last = listed.items[-1].id if listed.next and listed.items else None
    values = {
        "webhook": webhook,
        "waiting": waiting,
        "letters": listed.items,
        "next_after": last,
        "after": wanted.after,
        "include_replayed": include_replayed,
        "message": None,
        "notice": None,
        **context,
    }
    return render(request, "webhook_dead_letters.html", values, status_code=status, signed=signed, active="webhooks")


async def _show_dead_letters(request: Request, signed: Signed) -> Response:
    replayed = request.query_params.get("replayed", "")
    notice = f"{replayed} event(s) put back at the tail of their lanes." if replayed.isdigit() else None
    return await _dead_letters(request, signed, notice=notice)


async def _replay(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    webhook_id = request.path_params["webhook_id"]
    fields, _ = await _form(request)
    event_id = fields.get("event_id", "").strip() or None
    try:
        async with console.transaction() as session:
            replayed = await webhook_dead_letters.replay_dead_letters(
                session, signed.caller, webhook_id, now=console.clock.now(), event_id=event_id
            )
    except Conflict as error:
        return await _dead_letters(request, signed, status=409, message=f"Nothing was replayed: {error.message}.")
    url = console.url(f"/webhooks/{webhook_id}/dead-letters?replayed={len(replayed)}")
    return go_to(request, url) if is_htmx(request) else redirect(url)


def routes() -> list[Route]:
    admin = Role.ADMIN
    return [
        Route("/webhooks", page(_list), methods=["GET"]),
        Route("/webhooks", page(_create, role=admin), methods=["POST"]),
        Route("/webhooks/{webhook_id}", page(_show), methods=["GET"]),
        Route("/webhooks/{webhook_id}/health", page(_health), methods=["GET"]),
        Route("/webhooks/{webhook_id}/edit", page(_edit, role=admin), methods=["GET"]),
        Route("/webhooks/{webhook_id}/edit", page(_update, role=admin), methods=["POST"]),
        Route("/webhooks/{webhook_id}/enable", page(_set_enabled(True), role=admin), methods=["POST"]),
        Route("/webhooks/{webhook_id}/disable", page(_set_enabled(False), role=admin), methods=["POST"]),
        Route("/webhooks/{webhook_id}/delete", page(_delete, role=admin), methods=["POST"]),
        Route("/webhooks/{webhook_id}/test", page(_test, role=admin), methods=["POST"]),
        Route("/webhooks/{webhook_id}/recover", page(_recover, role=admin), methods=["POST"]),
        Route("/webhooks/{webhook_id}/rotate", page(_rotate, role=admin), methods=["POST"]),
        Route("/webhooks/{webhook_id}/deliveries", page(_deliveries), methods=["GET"]),
        Route("/webhooks/{webhook_id}/dead-letters", page(_show_dead_letters), methods=["GET"]),
        Route("/webhooks/{webhook_id}/dead-letters/replay", page(_replay, role=admin), methods=["POST"]),
    ]
