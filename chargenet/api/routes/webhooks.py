"""Webhooks, their dead letters, and the events feed over the API (`webhooks:read`, `webhooks:write`,
`events:read`). The use cases in `chargenet.services.webhooks` and `.events` apply decisions.md §4's object rules:
an object outside the caller's reach is 404, a list shows only what the caller reaches."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from chargenet.api.dependencies import Context
from chargenet.api.pagination import Cursor, PageParams
from chargenet.api.security import require
from chargenet.domain.events import EventType
from chargenet.domain.scopes import Scope
from chargenet.services import events as event_service
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import ApiApplication
from chargenet.services.events import EventPage
from chargenet.services.pages import Page
from chargenet.services.webhooks import DeadLetterView, Replayed, WebhookDetail, WebhookView
from chargenet.webhooks.outbound_auth import AuthType, OutboundAuth, TokenAuthMethod, build_auth
from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat

Reader = Annotated[ApiApplication, Depends(require(Scope.WEBHOOKS_READ))]
Writer = Annotated[ApiApplication, Depends(require(Scope.WEBHOOKS_WRITE))]
EventReader = Annotated[ApiApplication, Depends(require(Scope.EVENTS_READ))]

router = APIRouter(tags=["webhooks"])


class AuthSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: AuthType = AuthType.NONE
    username: str | None = None
    password: str | None = None
    token: str | None = None
    tokenUrl: str | None = None
    clientId: str | None = None
    clientSecret: str | None = None
    tokenAuthMethod: TokenAuthMethod = TokenAuthMethod.BASIC
    tokenScope: str | None = None

    def build(self) -> OutboundAuth:
        return build_auth(
            self.type,
            username=self.username,
            password=self.password,
            token=self.token,
            token_url=self.tokenUrl,
            client_id=self.clientId,
            client_secret=self.clientSecret,
            token_auth_method=self.tokenAuthMethod,
            scope=self.tokenScope,
        )


class WebhookCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    siteId: str
    url: str = Field(max_length=2000)
    events: list[EventType] = Field(min_length=1)
    auth: AuthSettings = AuthSettings()
    alg: SignatureAlgorithm = SignatureAlgorithm.ED25519
    signatureFormat: SignatureFormat = SignatureFormat.RFC9421


class WebhookUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, max_length=2000)
    events: list[EventType] | None = Field(default=None, min_length=1)
    auth: AuthSettings | None = None
    alg: SignatureAlgorithm | None = None
    signatureFormat: SignatureFormat | None = None
    enabled: bool | None = None


class ReplayRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    eventId: str | None = None


Limit = Annotated[int, Query(ge=1, le=500)]


@router.get("/webhooks", response_model=Page[WebhookView])
async def list_webhooks(
    context: Context, caller: Reader, page: PageParams, siteId: str | None = None
) -> Page[WebhookView]:
    """The webhooks the caller reaches with `webhooks:read`, ordered by id."""
    async with context.store.transaction() as session:
        return await webhook_service.list_webhooks(session, caller, page, site_id=siteId)


@router.post("/webhooks", status_code=201, response_model=WebhookView)
async def create_webhook(body: WebhookCreate, context: Context, caller: Writer) -> WebhookView:
    """Create a webhook; its credentials are stored encrypted and never returned."""
    async with context.store.transaction() as session:
        view = await webhook_service.create_webhook(
            session,
            caller,
            context.keys.credential_cipher(),
            site_id=body.siteId,
            url=body.url,
            event_types=[e.value for e in body.events],
            auth=body.auth.build(),
            algorithm=body.alg,
            signature_format=body.signatureFormat,
            now=context.clock.now(),
            allow_private=context.settings.webhook_allow_private,
        )
    context.webhooks_changed()
    return view


@router.get("/webhooks/{webhook_id}", response_model=WebhookDetail)
async def get_webhook(webhook_id: str, context: Context, caller: Reader) -> WebhookDetail:
    async with context.store.transaction() as session:
        return await webhook_service.get_webhook(session, caller, webhook_id)


@router.patch("/webhooks/{webhook_id}", response_model=WebhookView)
async def update_webhook(webhook_id: str, body: WebhookUpdate, context: Context, caller: Writer) -> WebhookView:
    """Change settings; `enabled: false` stops the lanes at once and keeps their events."""
    async with context.store.transaction() as session:
        view = await webhook_service.update_webhook(
            session,
            caller,
            context.keys.credential_cipher(),
            webhook_id,
            now=context.clock.now(),
            allow_private=context.settings.webhook_allow_private,
            url=body.url,
            event_types=[e.value for e in body.events] if body.events else None,
            auth=body.auth.build() if body.auth else None,
            algorithm=body.alg,
            signature_format=body.signatureFormat,
        )
        if body.enabled is not None:
            view = await webhook_service.set_enabled(session, caller, webhook_id, body.enabled, now=context.clock.now())
    context.webhooks_changed()
    return view


@router.delete("/webhooks/{webhook_id}", status_code=204, response_class=Response)
async def delete_webhook(webhook_id: str, context: Context, caller: Writer) -> Response:
    async with context.store.transaction() as session:
        await webhook_service.delete_webhook(session, caller, webhook_id)
    context.webhooks_changed()
    return Response(status_code=204)


@router.get("/webhooks/{webhook_id}/dead-letters", response_model=Page[DeadLetterView])
async def list_dead_letters(
    webhook_id: str,
    context: Context,
    caller: Reader,
    page: PageParams,
    include: Literal["waiting", "all"] = "waiting",
) -> Page[DeadLetterView]:
    """Events the webhook could not deliver (`retries_exhausted`) or had no room for (`queue_full`)."""
    async with context.store.transaction() as session:
        return await webhook_service.list_dead_letters(
            session, caller, webhook_id, page, include_replayed=include == "all"
        )


@router.post("/webhooks/{webhook_id}/dead-letters/replay", response_model=Replayed)
async def replay_dead_letters(
    webhook_id: str, context: Context, caller: Writer, body: ReplayRequest | None = None
) -> Replayed:
    """Send dead letters again, at the tail of their lanes: all that wait, or those of `eventId`."""
    async with context.store.transaction() as session:
        replayed = await webhook_service.replay_dead_letters(
            session, caller, webhook_id, now=context.clock.now(), event_id=body.eventId if body else None
        )
    context.webhooks_changed()
    return Replayed(replayed=[d.event_id for d in replayed])


@router.get("/events", tags=["events"], response_model=EventPage)
async def list_events(
    context: Context,
    siteId: str,
    caller: EventReader,
    eventType: Annotated[list[EventType] | None, Query()] = None,
    limit: Limit = 50,
    cursor: Annotated[str | None, Cursor(1000)] = None,
) -> EventPage:
    """The site's events of the retention window, oldest first; poll again from `next` (always set)."""
    async with context.store.transaction() as session:
        return await event_service.list_events(
            session, caller, site_id=siteId, event_types=eventType, cursor=cursor, limit=limit
        )
