"""Webhook use cases shared by the API and the CLI: configuration, dead letters and their replay.

Credentials are encrypted with the credential key and never come back out through a view. A webhook's
target address, and an OAuth2 token URL's, is checked when it is created or changed (if the name resolves
now) and again at every connect by the sender.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import Field, PlainSerializer
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.events import EventType
from chargenet.domain.scopes import Scope
from chargenet.errors import Conflict, InvalidInput, NotFound
from chargenet.ids import new_id
from chargenet.keys import CredentialCipher
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest, UnknownCursor
from chargenet.services.reach import reachable_site, site_filter
from chargenet.services.views import Instant, View
from chargenet.store.models import Site, Webhook, WebhookDeadLetter, WebhookLane, WebhookLaneEntry
from chargenet.webhooks.lane import LANE_CAPACITY, unsubscribed
from chargenet.webhooks.outbound_auth import NoAuth, OAuth2ClientCredentials, OutboundAuth, check_url, to_document
from chargenet.webhooks.queue import enqueue, store_dead_letter
from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat, check_format
from chargenet.webhooks.transport import HostUnresolvable, OutboundAddressRefused, Resolver, checked_addresses, resolve

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
    created_at: Instant
    updated_at: Instant


class LaneView(View):
    event_type: str
    size: int
    head_attempts: int
    next_attempt_at: Instant | None
    last_error: str | None


class WebhookDetail(WebhookView):
    """A webhook with the state of its lanes (one per subscribed event type)."""

    lanes: list[LaneView]


class DeadLetterView(View):
    id: Annotated[int, PlainSerializer(str, return_type=str)]
    webhook_id: str
    event_type: str
    event_id: str
    reason: str
    error: str
    attempts: int
    dead_at: Instant
    replayed_at: Instant | None
    event: dict[str, Any] = Field(description="the envelope as it was published (docs/schemas/)")


class Replayed(View):
    replayed: list[str] = Field(description="the event ids sent again")


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
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def _view_of(session: AsyncSession, row: Webhook) -> WebhookView:
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


async def check_target(url: str, *, allow_private: bool, resolver: Resolver = resolve, field: str = "url") -> None:
    """Refuse a URL whose host resolves now to an address that is not allowed, with InvalidInput naming
    `field` (unresolvable names pass: the sender checks again at every connect)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        await checked_addresses(host, port, allow_private=allow_private, resolver=resolver)
    except OutboundAddressRefused as exc:
        raise InvalidInput(f"target refused: {exc.reason}", field=field) from None
    except HostUnresolvable:
        return


async def _check_token_url(auth: OutboundAuth, *, allow_private: bool, resolver: Resolver) -> None:
    # A token request is an outbound request like the delivery itself: a private token URL would let a webhook
    # reach into the operator's network just the same (decisions.md §4).
    if isinstance(auth, OAuth2ClientCredentials):
        await check_target(auth.token_url, allow_private=allow_private, resolver=resolver, field="tokenUrl")


def _encrypt(cipher: CredentialCipher, auth: OutboundAuth) -> bytes | None:
    if isinstance(auth, NoAuth):
        return None
    return cipher.encrypt(json.dumps(to_document(auth)))


async def create_webhook(
    session: AsyncSession,
    caller: Caller,
    cipher: CredentialCipher,
    *,
    site_id: str,
    url: str,
    event_types: Sequence[str],
    auth: OutboundAuth,
    algorithm: SignatureAlgorithm = SignatureAlgorithm.ED25519,
    signature_format: SignatureFormat = SignatureFormat.RFC9421,
    now: datetime,
    allow_private: bool,
    resolver: Resolver = resolve,
) -> WebhookView:
    """Raises NotFound for an unknown site (or one the caller's `webhooks:write` does not reach), InvalidInput for
    a bad URL, event type, algorithm or auth."""
    site = await reachable_site(session, caller, Scope.WEBHOOKS_WRITE, site_id)
    check_url(url)
    check_format(algorithm, signature_format)
    types = parse_event_types(event_types)
    await check_target(url, allow_private=allow_private, resolver=resolver)
    await _check_token_url(auth, allow_private=allow_private, resolver=resolver)
    row = Webhook(
        id=new_id("wh"),
        site_id=site_id,
        url=url,
        event_types=",".join(types),
        auth_type=auth.type.value,
        credentials=_encrypt(cipher, auth),
        signature_algorithm=algorithm.value,
        signature_format=signature_format.value,
        enabled=True,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    for event_type in types:
        session.add(WebhookLane(webhook_id=row.id, event_type=event_type.value, size=0, head_attempts=0))
    await session.flush()
    return _view(row, site.company_id)


async def update_webhook(
    session: AsyncSession,
    caller: Caller,
    cipher: CredentialCipher,
    webhook_id: str,
    *,
    now: datetime,
    allow_private: bool,
    url: str | None = None,
    event_types: Sequence[str] | None = None,
    auth: OutboundAuth | None = None,
    algorithm: SignatureAlgorithm | None = None,
    signature_format: SignatureFormat | None = None,
    resolver: Resolver = resolve,
) -> WebhookView:
    """Change settings. Dropping an event type deletes its lane; events still waiting in it go to the dead
    letters with reason `unsubscribed` (replayable once the type is subscribed again)."""
    row = await _get(session, caller, Scope.WEBHOOKS_WRITE, webhook_id)
    if url is not None:
        check_url(url)
        await check_target(url, allow_private=allow_private, resolver=resolver)
        row.url = url
    new_algorithm = algorithm or SignatureAlgorithm(row.signature_algorithm)
    new_format = signature_format or SignatureFormat(row.signature_format)
    try:
        check_format(new_algorithm, new_format)
    except InvalidInput as exc:
        if algorithm is not None and signature_format is not None:
            raise  # the request itself asks for what cannot be
        # One of the two comes from the webhook as it is: the change conflicts with its state.
        raise Conflict(f"{exc.message} (the webhook's {'format' if algorithm else 'algorithm'} is kept)") from None
    row.signature_algorithm, row.signature_format = new_algorithm.value, new_format.value
    if auth is not None:
        await _check_token_url(auth, allow_private=allow_private, resolver=resolver)
        row.auth_type = auth.type.value
        row.credentials = _encrypt(cipher, auth)
    if event_types is not None:
        types = parse_event_types(event_types)
        row.event_types = ",".join(types)
        # Locked before their entries are read, in id order as the filler and the lane workers lock them: an
        # entry the filler commits after an unlocked read would go with its lane without a dead letter.
        lanes = {lane.event_type: lane for lane in await session.scalars(_lanes_of(webhook_id).with_for_update())}
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
                await session.execute(delete(WebhookLaneEntry).where(WebhookLaneEntry.lane_id == lane.id))
                await session.delete(lane)
    row.updated_at = now
    await session.flush()
    return await _view_of(session, row)


async def set_enabled(
    session: AsyncSession, caller: Caller, webhook_id: str, enabled: bool, *, now: datetime
) -> WebhookView:
    """Disabling stops the lanes' workers (an in-flight request is cancelled) and keeps their events;
    enabling resumes them where they were."""
    row = await _get(session, caller, Scope.WEBHOOKS_WRITE, webhook_id)
    row.enabled = enabled
    row.updated_at = now
    await session.flush()
    return await _view_of(session, row)


async def delete_webhook(session: AsyncSession, caller: Caller, webhook_id: str) -> None:
    row = await _get(session, caller, Scope.WEBHOOKS_WRITE, webhook_id)
    await session.execute(
        delete(WebhookLaneEntry).where(
            WebhookLaneEntry.lane_id.in_(select(WebhookLane.id).where(WebhookLane.webhook_id == webhook_id))
        )
    )
    await session.execute(delete(WebhookLane).where(WebhookLane.webhook_id == webhook_id))
    await session.execute(delete(WebhookDeadLetter).where(WebhookDeadLetter.webhook_id == webhook_id))
    await session.delete(row)
    await session.flush()


async def get_webhook(session: AsyncSession, caller: Caller, webhook_id: str) -> WebhookDetail:
    row = await _get(session, caller, Scope.WEBHOOKS_READ, webhook_id)
    view = await _view_of(session, row)
    return WebhookDetail(**dict(view), lanes=await _lanes(session, webhook_id))


async def list_webhooks(
    session: AsyncSession, caller: Caller, page: PageRequest, *, site_id: str | None = None
) -> Page[WebhookView]:
    """The webhooks the caller reaches with `webhooks:read` (of `site_id` only, when given), ordered by id."""
    query = (
        select(Webhook, Site.company_id)
        .join(Site, Site.id == Webhook.site_id)
        .where(site_filter(caller.reach(Scope.WEBHOOKS_READ)))
        .order_by(Webhook.id)
        .limit(page.fetch)
    )
    if site_id is not None:
        query = query.where(Webhook.site_id == site_id)
    if page.after is not None:
        query = query.where(Webhook.id > page.after)
    views = [_view(row, company_id) for row, company_id in await session.execute(query)]
    return page.page(views, lambda view: view.id)


async def get_lanes(session: AsyncSession, caller: Caller, webhook_id: str) -> list[LaneView]:
    await _get(session, caller, Scope.WEBHOOKS_READ, webhook_id)
    return await _lanes(session, webhook_id)


async def _lanes(session: AsyncSession, webhook_id: str) -> list[LaneView]:
    return [
        LaneView(
            event_type=lane.event_type,
            size=lane.size,
            head_attempts=lane.head_attempts,
            next_attempt_at=lane.next_attempt_at,
            last_error=lane.last_error,
        )
        for lane in await session.scalars(_lanes_of(webhook_id))
    ]


def _lanes_of(webhook_id: str) -> Any:
    return select(WebhookLane).where(WebhookLane.webhook_id == webhook_id).order_by(WebhookLane.id)


async def _get(session: AsyncSession, caller: Caller, scope: Scope, webhook_id: str) -> Webhook:
    """The webhook, if `scope` holds on its site for the caller; `NotFound` otherwise."""
    row = await session.get(Webhook, webhook_id)
    if row is not None:
        site = await session.get(Site, row.site_id)
        if site is not None and caller.allows(scope, site.company_id, site.id):
            return row
    raise NotFound("webhook", webhook_id)


def _dead_view(row: WebhookDeadLetter) -> DeadLetterView:
    return DeadLetterView(
        id=row.id,
        webhook_id=row.webhook_id,
        event_type=row.event_type,
        event_id=row.event_id,
        reason=row.reason,
        error=row.error,
        attempts=row.attempts,
        dead_at=row.dead_at,
        replayed_at=row.replayed_at,
        event=json.loads(row.body),
    )


def _dead_letter_position(after: str | None) -> int:
    """The dead letter id a page starts after (a 64-bit row id); `UnknownCursor` for a key no page gave."""
    if after is None:
        return 0
    if not (after.isascii() and after.isdecimal() and len(after) <= 18):
        raise UnknownCursor(after)
    return int(after)


async def list_dead_letters(
    session: AsyncSession,
    caller: Caller,
    webhook_id: str,
    page: PageRequest | None = None,
    *,
    include_replayed: bool = False,
) -> Page[DeadLetterView]:
    """Events the webhook could not deliver (`retries_exhausted`) or had no room for (`queue_full`), oldest first."""
    page = page or PageRequest()
    await _get(session, caller, Scope.WEBHOOKS_READ, webhook_id)
    after = _dead_letter_position(page.after)
    query = (
        select(WebhookDeadLetter)
        .where(WebhookDeadLetter.webhook_id == webhook_id, WebhookDeadLetter.id > after)
        .order_by(WebhookDeadLetter.id)
        .limit(page.fetch)
    )
    if not include_replayed:
        query = query.where(WebhookDeadLetter.replayed_at.is_(None))
    return page.page([_dead_view(row) for row in await session.scalars(query)], lambda view: str(view.id))


async def replay_dead_letters(
    session: AsyncSession, caller: Caller, webhook_id: str, *, now: datetime, event_id: str | None = None
) -> list[DeadLetterView]:
    """Put the webhook's dead letters (or those of one event) back at the tail of their lanes, oldest first,
    and mark them replayed.

    Raises NotFound for an unknown webhook, or an event with no dead letter waiting; Conflict when the event
    type is no longer subscribed or the lane is full (then nothing of this call is replayed).
    """
    webhook = await _get(session, caller, Scope.WEBHOOKS_WRITE, webhook_id)
    query = select(WebhookDeadLetter).where(
        WebhookDeadLetter.webhook_id == webhook_id, WebhookDeadLetter.replayed_at.is_(None)
    )
    if event_id is not None:
        query = query.where(WebhookDeadLetter.event_id == event_id)
    letters = list(await session.scalars(query.order_by(WebhookDeadLetter.id)))
    if event_id is not None and not letters:
        raise NotFound("dead letter of event", event_id)
    lanes = {lane.event_type: lane for lane in await session.scalars(_lanes_of(webhook.id).with_for_update())}
    for letter in letters:
        lane = lanes.get(letter.event_type)
        if lane is None:
            raise Conflict(f"webhook {webhook_id} no longer subscribes to {letter.event_type}")
        if lane.size >= LANE_CAPACITY:
            raise Conflict(f"the {letter.event_type} lane of webhook {webhook_id} is full ({LANE_CAPACITY} events)")
        refused = await enqueue(session, lane, event_id=letter.event_id, body=letter.body, now=now)
        assert refused is None
        letter.replayed_at = now
    await session.flush()
    return [_dead_view(letter) for letter in letters]
