"""Webhooks as the API, the command line and the console configure them: create, edit, enable, disable, delete,
list and show, with their credentials. What else there is of a webhook has a module of its own: its lanes'
health (`webhook_lanes`), the delivery log (`webhook_deliveries`), dead letters and their replay
(`webhook_dead_letters`) and the test event (`webhook_test_events`).

Credentials are encrypted with the credential key and never come back out through a view: a form learns only
which of them are set. A webhook's target address, and an OAuth2 token URL's, is checked when it is created or
changed (if the name resolves now) and again at every connect by the sender. Creating and changing a webhook
therefore take the store's `transaction` factory: the names are resolved outside any unit of work, and the
change is written in a short one after.

Every change (create, edit, enable, disable, delete here; a test event, a replay beside) writes its audit record
(`audit_change`) in the unit of work that makes it, whichever face asked, and bumps the webhook's `version` if it
changed the webhook; an edit made from an older version is refused with `StaleChange`. A console viewer changes
nothing (`Forbidden`). Each change but the test event wakes this process's lanes once its unit commits
(`webhooks.changes`): no face does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.events import EventType
from chargenet.domain.scopes import Scope
from chargenet.domain.text import is_storable
from chargenet.domain.webhook_filters import check_filter, loaded, stored
from chargenet.domain.webhook_headers import check_custom_headers, loaded_headers, stored_headers
from chargenet.errors import Conflict, InvalidInput, StaleChange
from chargenet.ids import new_id
from chargenet.keys import CredentialCipher
from chargenet.services import audit, sites
from chargenet.services.callers import Caller, refuse_viewer
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_site, reachable_webhook, site_filter
from chargenet.services.versions import check_version
from chargenet.services.views import Instant, View
from chargenet.services.webhook_lanes import LaneView, lane_at, lane_views, lanes_of
from chargenet.store.db import LONG, Transactions
from chargenet.store.models import (
    Site,
    Webhook,
    WebhookDeadLetter,
    WebhookDelivery,
    WebhookLane,
    WebhookLaneEntry,
)
from chargenet.webhooks import health
from chargenet.webhooks.changes import webhook_changed
from chargenet.webhooks.lane import unsubscribed
from chargenet.webhooks.outbound_auth import (
    AuthType,
    NoAuth,
    OAuth2ClientCredentials,
    OutboundAuth,
    TokenAuthMethod,
    build_auth,
    check_url,
    from_document,
    to_document,
)
from chargenet.webhooks.queue import store_dead_letter
from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat, check_format
from chargenet.webhooks.targets import check_targets, targets_of
from chargenet.webhooks.transport import Resolver, resolve

MAX_PAGE = 500


class WebhookView(View):
    """A webhook's settings; its credentials are stored encrypted and never shown."""

    id: str
    site_id: str
    company_id: str
    url: str
    event_types: list[str] = Field(alias="events")
    auth_type: str = Field(alias="auth")
    signature_algorithm: str = Field(alias="alg")
    signature_format: str
    enabled: bool
    headers: dict[str, str] = Field(
        description="custom request headers, sent with every request and not covered by the signature"
    )
    stations: list[str] = Field(description="only events of these stations (and of `chargePoints`); none: all")
    charge_points: list[str] = Field(description="only events of these charge points (and of `stations`)")
    auth_overlap_until: Instant | None = Field(
        default=None,
        description="while the previous credentials of a rotation are kept: a 401 or 403 is retried once with them",
    )
    version: int = Field(description="bumped by every change; an edit made from an older version is refused")
    created_at: Instant
    updated_at: Instant


class WebhookDetail(WebhookView):
    """A webhook with the state of its lanes (one per subscribed event type)."""

    lanes: list[LaneView]


@dataclass(frozen=True, slots=True)
class AuthSummary:
    """What a form may show of a webhook's credentials: the auth type, the token endpoint's client authentication
    method, and which fields hold a value, never the values."""

    type: AuthType
    set_fields: frozenset[str]
    token_auth_method: TokenAuthMethod = TokenAuthMethod.BASIC


# The credential fields of each auth type, by their form names (as `build_auth` takes them).
AUTH_FIELDS: dict[AuthType, tuple[str, ...]] = {
    AuthType.NONE: (),
    AuthType.BASIC: ("username", "password"),
    AuthType.TOKEN: ("token",),
    AuthType.OAUTH2: ("token_url", "client_id", "client_secret", "token_scope"),
}


@dataclass(frozen=True, slots=True)
class AuthForm:
    """Auth settings as a form sends them. Credentials are write-only: a field left blank keeps the value stored
    for the same auth type (a form never holds it to send back); a field typed replaces it."""

    type: AuthType
    username: str = ""
    password: str = ""
    token: str = ""
    token_url: str = ""
    client_id: str = ""
    client_secret: str = ""
    token_scope: str = ""
    token_auth_method: TokenAuthMethod = TokenAuthMethod.BASIC
    clear_scope: bool = False


def _auth_values(auth: OutboundAuth) -> dict[str, str]:
    document = to_document(auth)
    values = {
        "username": document.get("username"),
        "password": document.get("password"),
        "token": document.get("token"),
        "token_url": document.get("tokenUrl"),
        "client_id": document.get("clientId"),
        "client_secret": document.get("clientSecret"),
        "token_scope": document.get("scope"),
    }
    return {name: str(value) for name, value in values.items() if value}


def auth_from_form(form: AuthForm, stored: OutboundAuth | None = None) -> OutboundAuth:
    """The auth the form asks for, blanks filled from `stored` when it is of the same type; raises InvalidInput
    naming the form field (`username`, `token_url`, ...) that is missing or does not apply."""
    kept = _auth_values(stored) if stored is not None and stored.type is form.type else {}
    typed = {name: getattr(form, name).strip() for name in AUTH_FIELDS[AuthType.OAUTH2] + ("username", "password")}
    typed["token"] = form.token.strip()
    # Fields of other types are ignored (a form shows them all); only this type's are read.
    values = {name: typed.get(name) or kept.get(name, "") for name in AUTH_FIELDS[form.type]}
    if form.clear_scope:
        values["token_scope"] = ""
    names = {"token_url": "tokenUrl", "client_id": "clientId", "client_secret": "clientSecret"}
    try:
        return build_auth(
            form.type,
            username=values.get("username") or None,
            password=values.get("password") or None,
            token=values.get("token") or None,
            token_url=values.get("token_url") or None,
            client_id=values.get("client_id") or None,
            client_secret=values.get("client_secret") or None,
            token_auth_method=form.token_auth_method,
            scope=values.get("token_scope") or None,
        )
    except InvalidInput as error:
        back = {api: form_name for form_name, api in names.items()} | {"tokenScope": "token_scope"}
        raise InvalidInput(error.detail, field=back.get(error.field or "", error.field)) from None


def _view(row: Webhook, company_id: str) -> WebhookView:
    return WebhookView(
        id=row.id,
        site_id=row.site_id,
        company_id=company_id,
        url=row.url,
        event_types=row.event_types.split(","),
        auth_type=row.auth_type,
        signature_algorithm=row.signature_algorithm,
        signature_format=row.signature_format,
        enabled=row.enabled,
        headers=dict(loaded_headers(row.custom_headers)),
        stations=sorted(loaded(row.station_filter)),
        charge_points=sorted(loaded(row.charge_point_filter)),
        auth_overlap_until=row.previous_credentials_until,
        version=row.version,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def view_of(session: AsyncSession, row: Webhook) -> WebhookView:
    company_id = await session.scalar(select(Site.company_id).where(Site.id == row.site_id))
    assert company_id is not None
    return _view(row, company_id)


def parse_event_types(values: Sequence[str]) -> list[EventType]:
    """Event types from `Authorize,ChargePointStatus` or a list; refuses unknown and empty."""
    names = [name.strip() for value in values for name in value.split(",") if name.strip()]
    if not names:
        raise InvalidInput("subscribe to at least one event type", field="events")
    result: list[EventType] = []
    for name in names:
        if name not in set(EventType):
            raise InvalidInput(f"{name!r} is not one of {', '.join(EventType)}", field="events")
        if EventType(name) not in result:
            result.append(EventType(name))
    return result


def encrypt_auth(cipher: CredentialCipher, auth: OutboundAuth) -> bytes | None:
    if isinstance(auth, NoAuth):
        return None
    return cipher.encrypt(json.dumps(to_document(auth)))


def stored_auth(cipher: CredentialCipher, row: Webhook) -> OutboundAuth:
    if row.credentials is None:
        return NoAuth()
    return from_document(json.loads(cipher.decrypt(row.credentials)))


def shown_url(url: str) -> str:
    """A URL as the audit log keeps it: without its query, which may carry a partner's token."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _settings(row: Webhook) -> dict[str, str]:
    """What an audit record says of a webhook's settings: never a credential, and of custom headers their names
    only (a partner may put in one what it should not)."""
    return {
        "site": row.site_id,
        "url": shown_url(row.url),
        "events": row.event_types,
        "auth": row.auth_type,
        "alg": row.signature_algorithm,
        "format": row.signature_format,
        "headers": ",".join(name for name, _ in loaded_headers(row.custom_headers)),
        "stations": row.station_filter or "",
        "chargePoints": row.charge_point_filter or "",
    }


async def audit_change(
    session: AsyncSession,
    caller: Caller,
    row: Webhook,
    action: str,
    now: datetime,
    detail: dict[str, str] | None = None,
    *,
    company_id: str | None = None,
) -> None:
    """Record `action` on the webhook in the audit log, in the unit of work of `session`."""
    if company_id is None:
        company_id = await session.scalar(select(Site.company_id).where(Site.id == row.site_id))
    await audit.record(
        session,
        caller.actor,
        company_id=company_id,
        action=action,
        object_type="webhook",
        object_id=row.id,
        now=now,
        detail=detail,
    )


async def create_webhook(
    transaction: Transactions,
    caller: Caller,
    cipher: CredentialCipher,
    *,
    site_id: str,
    url: str,
    event_types: Sequence[str],
    auth: OutboundAuth | AuthForm,
    algorithm: SignatureAlgorithm = SignatureAlgorithm.ED25519,
    signature_format: SignatureFormat = SignatureFormat.RFC9421,
    headers: Sequence[tuple[str, str]] = (),
    stations: Sequence[str] = (),
    charge_points: Sequence[str] = (),
    now: datetime,
    allow_private: bool,
    resolver: Resolver = resolve,
) -> WebhookView:
    """Create the webhook in a unit of work of its own, once its addresses have been resolved and allowed outside
    any. Raises NotFound for an unknown site (or one the caller's `webhooks:write` does not reach), InvalidInput
    for a bad URL, event type, algorithm, auth, custom header or filter."""
    refuse_viewer(caller, "creating a webhook")
    check_url(url)
    types = parse_event_types(event_types)
    custom = check_custom_headers(headers)
    station_ids, charge_point_ids = check_filter(stations, charge_points)
    if isinstance(auth, AuthForm):
        auth = auth_from_form(auth)
    check_format(algorithm, signature_format)
    await check_targets(targets_of(url, auth), allow_private=allow_private, resolver=resolver)
    async with transaction() as session:
        site = await reachable_site(session, caller, Scope.WEBHOOKS_WRITE, site_id)
        row = Webhook(
            id=new_id("wh"),
            site_id=site_id,
            url=url,
            event_types=",".join(types),
            auth_type=auth.type.value,
            credentials=encrypt_auth(cipher, auth),
            signature_algorithm=algorithm.value,
            signature_format=signature_format.value,
            custom_headers=stored_headers(custom),
            station_filter=stored(station_ids),
            charge_point_filter=stored(charge_point_ids),
            created_at=now,
            updated_at=now,
        )
        session.add(row)
        await session.flush()
        for event_type in types:
            session.add(WebhookLane(webhook_id=row.id, event_type=event_type.value, size=0, head_attempts=0))
        await session.flush()
        await audit_change(session, caller, row, "webhook.create", now, _settings(row), company_id=site.company_id)
        webhook_changed(session)
        return _view(row, site.company_id)


async def update_webhook(
    transaction: Transactions,
    caller: Caller,
    cipher: CredentialCipher,
    webhook_id: str,
    *,
    now: datetime,
    allow_private: bool,
    url: str | None = None,
    event_types: Sequence[str] | None = None,
    auth: OutboundAuth | AuthForm | None = None,
    algorithm: SignatureAlgorithm | None = None,
    signature_format: SignatureFormat | None = None,
    enabled: bool | None = None,
    headers: Sequence[tuple[str, str]] | None = None,
    stations: Sequence[str] | None = None,
    charge_points: Sequence[str] | None = None,
    expected_version: int | None = None,
    resolver: Resolver = resolve,
) -> WebhookView:
    """Change settings, and with `enabled` enable or disable the webhook too (as `set_enabled`), in one unit of
    work. Dropping an event type deletes its lane; events still waiting in it go to the dead letters with reason
    `unsubscribed` (replayable once the type is subscribed again). An `AuthForm` keeps the stored credentials its
    blank fields stand for; new credentials given here replace the old at once and end a rotation's overlap
    (`webhook_rotation` keeps the old ones for a while). `headers` replaces the custom headers; `stations` and
    `charge_points` replace that part of the filter (events already in a lane stay there). Raises `StaleChange`
    when `expected_version` is given and the webhook moved on; nothing is changed when any setting is refused.

    A new URL or token URL is resolved and allowed before that unit, outside any: where an `AuthForm` needs the
    stored credentials to say which token URL it means, they are read in a short unit first. Should the webhook
    change meanwhile so that the unit would store an address not checked, it is refused with `StaleChange`."""
    if url is not None:
        check_url(url)
    types = parse_event_types(event_types) if event_types is not None else None
    care = _care_change(headers, stations, charge_points)
    if algorithm is not None and signature_format is not None:
        check_format(algorithm, signature_format)
    checked: tuple[tuple[str, str], ...] = ()
    if url is not None or auth is not None:
        meant: OutboundAuth | None
        if isinstance(auth, AuthForm):
            async with transaction() as session:
                row = await reachable_webhook(
                    session, caller, Scope.WEBHOOKS_WRITE, webhook_id, change="changing a webhook"
                )
                check_version("webhook", row.id, row.version, expected_version)
                meant = auth_from_form(auth, stored_auth(cipher, row))
        else:
            meant = auth
        checked = targets_of(url, meant)
        await check_targets(checked, allow_private=allow_private, resolver=resolver)
    async with transaction() as session:
        row = await reachable_webhook(session, caller, Scope.WEBHOOKS_WRITE, webhook_id, change="changing a webhook")
        check_version("webhook", row.id, row.version, expected_version)
        if isinstance(auth, AuthForm):
            auth = auth_from_form(auth, stored_auth(cipher, row))
        if not set(targets_of(url, auth)) <= set(checked):
            raise StaleChange(f"webhook {row.id}'s credentials were changed meanwhile; try again")
        await _change(session, caller, cipher, row, now, url, types, auth, algorithm, signature_format, care)
        if enabled is not None:
            await _switch(session, caller, row, enabled, now)
        return await view_of(session, row)


async def _change(
    session: AsyncSession,
    caller: Caller,
    cipher: CredentialCipher,
    row: Webhook,
    now: datetime,
    url: str | None,
    types: list[EventType] | None,
    auth: OutboundAuth | None,
    algorithm: SignatureAlgorithm | None,
    signature_format: SignatureFormat | None,
    care: _CareChange | None = None,
) -> None:
    """`update_webhook`'s change of the settings, once its addresses are allowed."""
    # The custom headers' values too: the audit record names the headers only, but a new value is a change.
    before = (_settings(row), row.credentials, row.custom_headers)
    if care is not None:
        _apply_care(row, care)
    new_algorithm = algorithm or SignatureAlgorithm(row.signature_algorithm)
    new_format = signature_format or SignatureFormat(row.signature_format)
    try:
        check_format(new_algorithm, new_format)
    except InvalidInput as exc:
        # One of the two comes from the webhook as it is: the change conflicts with its state.
        raise Conflict(f"{exc.message} (the webhook's {'format' if algorithm else 'algorithm'} is kept)") from None
    if url is not None:
        row.url = url
    row.signature_algorithm, row.signature_format = new_algorithm.value, new_format.value
    if auth is not None and auth != stored_auth(cipher, row):
        row.auth_type = auth.type.value
        row.credentials = encrypt_auth(cipher, auth)
        row.previous_credentials = row.previous_credentials_until = None
    if types is not None:
        row.event_types = ",".join(types)
        # Locked before their entries are read, in id order as the filler and the lane workers lock them: an
        # entry the filler commits after an unlocked read would go with its lane without a dead letter.
        lanes = {lane.event_type: lane for lane in await session.scalars(lanes_of(row.id).with_for_update())}
        for event_type in types:
            if event_type.value not in lanes:
                session.add(WebhookLane(webhook_id=row.id, event_type=event_type.value, size=0, head_attempts=0))
        for name, lane in lanes.items():
            if name not in types:
                # Nothing is silently lost: what still waits in the dropped lane goes to the dead letters.
                entries = await session.scalars(
                    select(WebhookLaneEntry).where(WebhookLaneEntry.lane_id == lane.id).order_by(WebhookLaneEntry.id)
                )
                for entry in entries:
                    letter = unsubscribed(entry.event_id, name)
                    await store_dead_letter(session, row.id, name, letter, entry.body, now)
                await session.execute(
                    delete(WebhookLaneEntry).where(WebhookLaneEntry.lane_id == lane.id).execution_options(**LONG)
                )
                await session.delete(lane)
    if (_settings(row), row.credentials, row.custom_headers) != before:
        row.version += 1
        row.updated_at = now
        detail = _settings(row)
        if row.credentials != before[1]:
            detail["authentication"] = "replaced"
        await session.flush()
        await audit_change(session, caller, row, "webhook.update", now, detail)
        webhook_changed(session)
    await session.flush()


@dataclass(frozen=True, slots=True)
class _CareChange:
    headers: str | bool | None
    """The custom headers as stored, or False when they are not changed."""
    stations: str | bool | None
    charge_points: str | bool | None


def _care_change(
    headers: Sequence[tuple[str, str]] | None, stations: Sequence[str] | None, charge_points: Sequence[str] | None
) -> _CareChange:
    """Custom headers and filter of an update, checked before anything is read or written."""
    checked = check_filter(stations or (), charge_points or ())
    return _CareChange(
        headers=False if headers is None else stored_headers(check_custom_headers(headers)),
        stations=False if stations is None else stored(checked[0]),
        charge_points=False if charge_points is None else stored(checked[1]),
    )


def _apply_care(row: Webhook, care: _CareChange) -> None:
    # `_change` compares the settings before and after: a change here is audited and bumps the version with it.
    if care.headers is not False:
        row.custom_headers = care.headers if isinstance(care.headers, str) else None
    if care.stations is not False:
        row.station_filter = care.stations if isinstance(care.stations, str) else None
    if care.charge_points is not False:
        row.charge_point_filter = care.charge_points if isinstance(care.charge_points, str) else None


async def set_enabled(
    session: AsyncSession,
    caller: Caller,
    webhook_id: str,
    enabled: bool,
    *,
    now: datetime,
    expected_version: int | None = None,
) -> WebhookView:
    """Disabling stops the lanes' workers (an in-flight request is cancelled) and keeps their events;
    enabling resumes them where they were."""
    verb = "enabling" if enabled else "disabling"
    row = await reachable_webhook(session, caller, Scope.WEBHOOKS_WRITE, webhook_id, change=f"{verb} a webhook")
    check_version("webhook", row.id, row.version, expected_version)
    await _switch(session, caller, row, enabled, now)
    return await view_of(session, row)


async def _switch(session: AsyncSession, caller: Caller, row: Webhook, enabled: bool, now: datetime) -> None:
    if row.enabled != enabled:
        row.enabled = enabled
        row.version += 1
        row.updated_at = now
        await session.flush()
        await audit_change(session, caller, row, "webhook.enable" if enabled else "webhook.disable", now)
        webhook_changed(session)


async def delete_webhook(
    session: AsyncSession, caller: Caller, webhook_id: str, *, now: datetime, expected_version: int | None = None
) -> None:
    """Delete the webhook with its lanes, their events, its dead letters and its delivery log."""
    row = await reachable_webhook(session, caller, Scope.WEBHOOKS_WRITE, webhook_id, change="deleting a webhook")
    check_version("webhook", row.id, row.version, expected_version)
    await audit_change(session, caller, row, "webhook.delete", now, _settings(row))
    await session.execute(
        delete(WebhookLaneEntry)
        .where(WebhookLaneEntry.lane_id.in_(select(WebhookLane.id).where(WebhookLane.webhook_id == webhook_id)))
        .execution_options(**LONG)
    )
    await session.execute(delete(WebhookLane).where(WebhookLane.webhook_id == webhook_id))
    await session.execute(
        delete(WebhookDeadLetter).where(WebhookDeadLetter.webhook_id == webhook_id).execution_options(**LONG)
    )
    await session.execute(
        delete(WebhookDelivery).where(WebhookDelivery.webhook_id == webhook_id).execution_options(**LONG)
    )
    await session.delete(row)
    await session.flush()
    webhook_changed(session)


async def get_webhook(session: AsyncSession, caller: Caller, webhook_id: str) -> WebhookDetail:
    row = await reachable_webhook(session, caller, Scope.WEBHOOKS_READ, webhook_id)
    view = await view_of(session, row)
    return WebhookDetail(**dict(view), lanes=await lane_views(session, webhook_id))


async def auth_summary(session: AsyncSession, caller: Caller, cipher: CredentialCipher, webhook_id: str) -> AuthSummary:
    """Which credential fields of the webhook are set, for a form that shows "set" instead of their values."""
    row = await reachable_webhook(session, caller, Scope.WEBHOOKS_READ, webhook_id)
    auth = stored_auth(cipher, row)
    method = auth.token_auth_method if isinstance(auth, OAuth2ClientCredentials) else TokenAuthMethod.BASIC
    return AuthSummary(auth.type, frozenset(_auth_values(auth)), method)


async def list_webhooks(
    session: AsyncSession,
    caller: Caller,
    page: PageRequest,
    *,
    site_id: str | None = None,
    enabled: bool | None = None,
    event_type: str | None = None,
    level: health.Level | None = None,
) -> Page[WebhookView]:
    """The webhooks the caller reaches with `webhooks:read` (of `site_id` only, when given; enabled or not;
    subscribed to `event_type`; with a lane at `level` or worse), ordered by id."""
    query = (
        select(Webhook, Site.company_id)
        .join(Site, Site.id == Webhook.site_id)
        .where(site_filter(caller.reach(Scope.WEBHOOKS_READ)))
        .order_by(Webhook.id)
        .limit(page.fetch)
    )
    if site_id is not None:
        query = query.where(Webhook.site_id == site_id)
    if enabled is not None:
        query = query.where(Webhook.enabled.is_(enabled))
    if event_type is not None:
        query = query.where(("," + Webhook.event_types + ",").contains(f",{event_type},"))
    if level is not None:
        query = query.where(select(WebhookLane.id).where(WebhookLane.webhook_id == Webhook.id, lane_at(level)).exists())
    if page.after is not None:
        query = query.where(Webhook.id > page.after)
    views = [_view(row, company_id) for row, company_id in await session.execute(query)]
    return page.page(views, lambda view: view.id)


async def site_choices(session: AsyncSession, caller: Caller) -> list[tuple[str, str]]:
    """(id, name) of the sites the caller reaches with `webhooks:read`, by name (`sites.site_choices`)."""
    return await sites.site_choices(session, caller, Scope.WEBHOOKS_READ)


async def site_choice(session: AsyncSession, caller: Caller, site_id: str) -> tuple[str, str] | None:
    """(id, name) of the site if the caller reaches it with `webhooks:read`; None for any other id (unknown, of
    another company, or text no site id could be), so that a form pre-filled from an address is simply not
    pre-filled rather than an error that tells one company about another's sites."""
    if not site_id or len(site_id) > 255 or not is_storable(site_id):
        return None
    row = (
        await session.execute(
            select(Site.id, Site.name).where(Site.id == site_id, site_filter(caller.reach(Scope.WEBHOOKS_READ)))
        )
    ).first()
    return None if row is None else (row[0], row[1])
