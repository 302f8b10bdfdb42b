"""Webhooks, their dead letters, and the events feed over the API.

The caller's permission check is passed in (`require(scope)` returns a FastAPI dependency that authenticates
the bearer token and answers 401/403 by itself), so these routes only apply decisions.md §4's object rules:
an object outside the caller's reach is 404, a list shows only what the caller reaches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, Protocol

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.events import EventType
from chargenet.errors import NotFound
from chargenet.services import events as event_service
from chargenet.services import webhooks as webhook_service
from chargenet.store.models import Site
from chargenet.webhooks.outbound_auth import AuthType, OutboundAuth, TokenAuthMethod, build_auth
from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat

WEBHOOKS_READ = "webhooks:read"
WEBHOOKS_WRITE = "webhooks:write"
EVENTS_READ = "events:read"


class SitePermissions(Protocol):
    def allows(self, scope: Any, company_id: str, site_id: str | None = None) -> bool: ...


class Caller(Protocol):
    @property
    def permissions(self) -> SitePermissions: ...


Require = Callable[[str], Callable[..., Awaitable[Caller]]]


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


def create_router(require: Require, on_change: Callable[[], None] = lambda: None) -> APIRouter:
    """The `/webhooks` and `/events` routes. `on_change` is called after a webhook changed, so the delivery
    engine of this process can act on it at once (other processes notice within their lease round)."""
    router = APIRouter(tags=["webhooks"])
    # Defaults rather than `Annotated` aliases: with postponed annotations FastAPI resolves annotation strings
    # in the module's globals, where aliases made inside this function do not exist.
    reader = Depends(require(WEBHOOKS_READ))
    writer = Depends(require(WEBHOOKS_WRITE))
    event_reader = Depends(require(EVENTS_READ))

    def context(request: Request) -> Any:
        return request.app.state.context

    async def visible(session: AsyncSession, caller: Caller, scope: str, webhook_id: str) -> None:
        view = await webhook_service.get_webhook(session, webhook_id)
        if not caller.permissions.allows(scope, view.company_id, view.site_id):
            raise NotFound("webhook", webhook_id)

    @router.get("/webhooks")
    async def list_webhooks(
        request: Request,
        caller: Caller = reader,
        siteId: str | None = None,
        limit: Limit = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """The webhooks the caller reaches with `webhooks:read`, oldest first."""
        async with context(request).store.transaction() as session:
            views = await webhook_service.list_webhooks(session, site_id=siteId)
        items = [v for v in views if caller.permissions.allows(WEBHOOKS_READ, v.company_id, v.site_id)]
        start = next((i + 1 for i, v in enumerate(items) if v.id == cursor), 0) if cursor else 0
        page = items[start : start + limit]
        more = start + limit < len(items)
        return {"items": [v.to_json() for v in page], "next": page[-1].id if more and page else None}

    @router.post("/webhooks", status_code=201)
    async def create_webhook(request: Request, body: WebhookCreate, caller: Caller = writer) -> dict[str, Any]:
        """Create a webhook; its credentials are stored encrypted and never returned."""
        ctx = context(request)
        async with ctx.store.transaction() as session:
            company_id = await session.scalar(select(Site.company_id).where(Site.id == body.siteId))
            if company_id is None or not caller.permissions.allows(WEBHOOKS_WRITE, company_id, body.siteId):
                raise NotFound("site", body.siteId)
            view = await webhook_service.create_webhook(
                session,
                ctx.keys.credential_cipher(),
                site_id=body.siteId,
                url=body.url,
                event_types=[e.value for e in body.events],
                auth=body.auth.build(),
                algorithm=body.alg,
                signature_format=body.signatureFormat,
                now=ctx.clock.now(),
                allow_private=ctx.settings.webhook_allow_private,
            )
        on_change()
        return view.to_json()

    @router.get("/webhooks/{webhook_id}")
    async def get_webhook(webhook_id: str, request: Request, caller: Caller = reader) -> dict[str, Any]:
        async with context(request).store.transaction() as session:
            await visible(session, caller, WEBHOOKS_READ, webhook_id)
            view = await webhook_service.get_webhook(session, webhook_id)
            lanes = await webhook_service.get_lanes(session, webhook_id)
        return {**view.to_json(), "lanes": [lane.to_json() for lane in lanes]}

    @router.patch("/webhooks/{webhook_id}")
    async def update_webhook(
        webhook_id: str, request: Request, body: WebhookUpdate, caller: Caller = writer
    ) -> dict[str, Any]:
        """Change settings; `enabled: false` stops the lanes at once and keeps their events."""
        ctx = context(request)
        async with ctx.store.transaction() as session:
            await visible(session, caller, WEBHOOKS_WRITE, webhook_id)
            view = await webhook_service.update_webhook(
                session,
                ctx.keys.credential_cipher(),
                webhook_id,
                now=ctx.clock.now(),
                allow_private=ctx.settings.webhook_allow_private,
                url=body.url,
                event_types=[e.value for e in body.events] if body.events else None,
                auth=body.auth.build() if body.auth else None,
                algorithm=body.alg,
                signature_format=body.signatureFormat,
            )
            if body.enabled is not None:
                view = await webhook_service.set_enabled(session, webhook_id, body.enabled, now=ctx.clock.now())
        on_change()
        return view.to_json()

    @router.delete("/webhooks/{webhook_id}", status_code=204)
    async def delete_webhook(webhook_id: str, request: Request, caller: Caller = writer) -> Response:
        async with context(request).store.transaction() as session:
            await visible(session, caller, WEBHOOKS_WRITE, webhook_id)
            await webhook_service.delete_webhook(session, webhook_id)
        on_change()
        return Response(status_code=204)

    @router.get("/webhooks/{webhook_id}/dead-letters")
    async def list_dead_letters(
        webhook_id: str,
        request: Request,
        caller: Caller = reader,
        limit: Limit = 50,
        cursor: str | None = None,
        include: Literal["waiting", "all"] = "waiting",
    ) -> dict[str, Any]:
        """Events the webhook could not deliver (`retries_exhausted`) or had no room for (`queue_full`)."""
        async with context(request).store.transaction() as session:
            await visible(session, caller, WEBHOOKS_READ, webhook_id)
            page = await webhook_service.list_dead_letters(
                session, webhook_id, limit=limit, cursor=cursor, include_replayed=include == "all"
            )
        return {"items": [d.to_json() for d in page.items], "next": page.next}

    @router.post("/webhooks/{webhook_id}/dead-letters/replay")
    async def replay_dead_letters(
        webhook_id: str, request: Request, body: ReplayRequest | None = None, caller: Caller = writer
    ) -> dict[str, Any]:
        """Send dead letters again, at the tail of their lanes: all that wait, or those of `eventId`."""
        ctx = context(request)
        async with ctx.store.transaction() as session:
            await visible(session, caller, WEBHOOKS_WRITE, webhook_id)
            replayed = await webhook_service.replay_dead_letters(
                session, webhook_id, now=ctx.clock.now(), event_id=body.eventId if body else None
            )
        on_change()
        return {"replayed": [d.event_id for d in replayed]}

    @router.get("/events", tags=["events"])
    async def list_events(
        request: Request,
        siteId: str,
        caller: Caller = event_reader,
        eventType: Annotated[list[EventType] | None, Query()] = None,
        limit: Limit = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """The site's events of the retention window, oldest first; poll again from `next` (always set)."""
        async with context(request).store.transaction() as session:
            company_id = await session.scalar(select(Site.company_id).where(Site.id == siteId))
            if company_id is None or not caller.permissions.allows(EVENTS_READ, company_id, siteId):
                raise NotFound("site", siteId)
            page = await event_service.list_events(
                session, site_id=siteId, event_types=eventType, cursor=cursor, limit=limit
            )
        return {"items": page.items, "next": page.next}

    return router
