"""Webhooks, their delivery log, test events, dead letters, and the events feed over the API (`webhooks:read`,
`webhooks:write`, `events:read`). The use cases in `chargenet.services` (`webhooks`, `webhook_dead_letters`,
`webhook_deliveries`, `webhook_test_events`, `events`) apply decisions.md §4's object rules (an object outside
the caller's reach is 404, a list shows only what the caller reaches) and write every change to the audit log."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, ConfigDict, Discriminator, Field, JsonValue, StrictBool, StrictStr, Tag

from chargenet.api.bounds import Bounds, Integral
from chargenet.api.dependencies import Context
from chargenet.api.fields import DateTime, HttpUrl, ObjectId, Secret
from chargenet.api.pagination import Cursor, PageParams
from chargenet.api.security import require
from chargenet.domain.events import EventType
from chargenet.domain.scopes import Scope
from chargenet.domain.text import INT32_MAX
from chargenet.domain.webhook_filters import ID_PATTERN, MAX_IDS
from chargenet.domain.webhook_headers import MAX_HEADERS, NAME_SCHEMA, VALUE_SCHEMA
from chargenet.services import events as event_service
from chargenet.services import (
    webhook_dead_letters,
    webhook_deliveries,
    webhook_recovery,
    webhook_rotation,
    webhook_test_events,
)
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import ApiApplication
from chargenet.services.events import EventPage
from chargenet.services.pages import Page, PageRequest
from chargenet.services.webhook_dead_letters import DeadLetterView, Replayed
from chargenet.services.webhook_deliveries import DeliveryFilter, DeliveryView
from chargenet.services.webhook_recovery import Recovered
from chargenet.services.webhooks import WebhookDetail, WebhookView
from chargenet.webhooks.outbound_auth import AuthType, OutboundAuth, TokenAuthMethod, build_auth
from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat

Reader = Annotated[ApiApplication, Depends(require(Scope.WEBHOOKS_READ))]
Writer = Annotated[ApiApplication, Depends(require(Scope.WEBHOOKS_WRITE))]
EventReader = Annotated[ApiApplication, Depends(require(Scope.EVENTS_READ))]

router = APIRouter(tags=["webhooks"])


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


# How the service authenticates to the partner's endpoint: one shape per `type`, each with the settings that type
# needs and no other (`webhooks.outbound_auth.build_auth` refuses a missing or a foreign one).
class NoAuthSettings(_Body):
    type: Literal[AuthType.NONE] = AuthType.NONE

    def build(self) -> OutboundAuth:
        return build_auth(self.type)


class BasicAuthSettings(_Body):
    type: Literal[AuthType.BASIC]
    username: Annotated[StrictStr, Field(min_length=1, max_length=500, pattern="^[^:\\x00]*$")] = Field(
        description="HTTP Basic user name (RFC 7617: no ':')"
    )
    password: Secret

    def build(self) -> OutboundAuth:
        return build_auth(self.type, username=self.username, password=self.password)


class TokenAuthSettings(_Body):
    type: Literal[AuthType.TOKEN]
    token: Secret = Field(description="sent as `Authorization: Token <token>`")

    def build(self) -> OutboundAuth:
        return build_auth(self.type, token=self.token)


class OAuth2AuthSettings(_Body):
    type: Literal[AuthType.OAUTH2]
    tokenUrl: HttpUrl = Field(description="the partner's token endpoint (client credentials grant)")
    clientId: Secret
    clientSecret: Secret
    tokenAuthMethod: TokenAuthMethod = TokenAuthMethod.BASIC
    tokenScope: Annotated[StrictStr, Field(min_length=1, max_length=500)] | None = None

    def build(self) -> OutboundAuth:
        return build_auth(
            self.type,
            token_url=self.tokenUrl,
            client_id=self.clientId,
            client_secret=self.clientSecret,
            token_auth_method=self.tokenAuthMethod,
            scope=self.tokenScope,
        )


def _auth_type(value: object) -> str:
    """The settings' `type`; `none` when absent, as it defaults to."""
    if isinstance(value, dict):
        return str(value.get("type", AuthType.NONE.value))
    return str(getattr(value, "type", AuthType.NONE.value))


AuthSettings = Annotated[
    Annotated[NoAuthSettings, Tag(AuthType.NONE.value)]
    | Annotated[BasicAuthSettings, Tag(AuthType.BASIC.value)]
    | Annotated[TokenAuthSettings, Tag(AuthType.TOKEN.value)]
    | Annotated[OAuth2AuthSettings, Tag(AuthType.OAUTH2.value)],
    Discriminator(_auth_type),
]

# `rsa-pss-sha256` only with the legacy format (`webhooks.signing.check_format`): a new webhook names the legacy
# format with it (the format defaults to RFC 9421); a change does not ask for both with RFC 9421, and where it
# changes only one, the webhook's other one decides (409 when it does not allow it).
_ALG_NEEDS_LEGACY: dict[str, JsonValue] = {
    "anyOf": [
        {"properties": {"alg": {"not": {"const": SignatureAlgorithm.RSA_PSS_SHA256.value}}}},
        {"required": ["signatureFormat"], "properties": {"signatureFormat": {"const": SignatureFormat.LEGACY.value}}},
    ]
}
_ALG_NOT_WITH_RFC9421: dict[str, JsonValue] = {
    "not": {
        "required": ["alg", "signatureFormat"],
        "properties": {
            "alg": {"const": SignatureAlgorithm.RSA_PSS_SHA256.value},
            "signatureFormat": {"const": SignatureFormat.RFC9421.value},
        },
    }
}


# Custom headers and the station/charge point filter, as `domain.webhook_headers` and `domain.webhook_filters` have
# them. The headers' rules are checked by the use case for every face (a refusal names `headers`); the document
# says them all but one: a name given twice in different cases is refused too.
CustomHeaders = Annotated[
    dict[StrictStr, StrictStr],
    Field(
        description="sent with every request, not covered by the signature; never one chargenet sets (`Signature`,"
        " `Signature-Input`, `Content-Digest`, `Authorization`, `Host`, `Content-Length`, `X-Request-ID`,"
        " `Content-Type`, `User-Agent`, hop-by-hop headers), each name once in any case",
        examples=[{"X-Partner-Tenant": "acme"}],
        json_schema_extra={
            "maxProperties": MAX_HEADERS,
            "propertyNames": NAME_SCHEMA,
            "additionalProperties": VALUE_SCHEMA,
        },
    ),
]
FilterId = Annotated[StrictStr, Field(pattern=f"^{ID_PATTERN.pattern}$")]
FilterIds = Annotated[list[FilterId], Field(max_length=MAX_IDS)]


class WebhookCreate(_Body):
    model_config = ConfigDict(
        json_schema_extra={
            **_ALG_NEEDS_LEGACY,
            "examples": [
                {
                    "siteId": "site_4f9q2x7m1cae",
                    "url": "https://partner.example/hooks/chargenet",
                    "events": ["ChargePointStatus", "StartTransaction", "StopTransaction"],
                    "auth": {"type": "token", "token": "partner-issued-token"},
                }
            ],
        }
    )

    siteId: ObjectId
    url: HttpUrl
    events: list[EventType] = Field(min_length=1, max_length=len(EventType))
    auth: AuthSettings = Field(default_factory=NoAuthSettings)
    alg: SignatureAlgorithm = SignatureAlgorithm.ED25519
    signatureFormat: SignatureFormat = SignatureFormat.RFC9421
    headers: CustomHeaders = Field(default_factory=dict)
    stations: FilterIds = Field(default_factory=list, description="only events of these stations (or `chargePoints`)")
    chargePoints: FilterIds = Field(default_factory=list, description="only events of these charge points")


class WebhookUpdate(_Body):
    model_config = ConfigDict(json_schema_extra={**_ALG_NOT_WITH_RFC9421, "examples": [{"enabled": False}]})

    url: HttpUrl | None = None
    events: list[EventType] | None = Field(default=None, min_length=1, max_length=len(EventType))
    auth: AuthSettings | None = None
    alg: SignatureAlgorithm | None = Field(
        default=None, description="with the webhook's format: 409 when it does not allow the algorithm"
    )
    signatureFormat: SignatureFormat | None = Field(
        default=None, description="with the webhook's algorithm: 409 when it does not allow the format"
    )
    enabled: StrictBool | None = None
    headers: CustomHeaders | None = Field(default=None, description="replaces the custom headers (`{}`: none)")
    stations: FilterIds | None = None
    chargePoints: FilterIds | None = None
    version: Annotated[int, Bounds(1, INT32_MAX), Integral] | None = Field(
        default=None, description="refuse the change (409) unless the webhook is at this version"
    )


class RecoverRequest(_Body):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"since": "2026-07-01T00:00:00+02:00", "until": "2026-07-02T00:00:00+02:00"}]}
    )

    since: DateTime = Field(description="the window's start (included); within the retention of delivered events")
    until: DateTime = Field(description="the window's end (excluded); not in the future")


class RotateRequest(_Body):
    auth: AuthSettings = Field(description="the new credentials, used at once")
    overlapUntil: DateTime = Field(
        description="until then a 401 or 403 under the new credentials is retried once with the previous ones"
    )
    version: Annotated[int, Bounds(1, INT32_MAX), Integral] | None = Field(
        default=None, description="refuse the change (409) unless the webhook is at this version"
    )


class ReplayRequest(_Body):
    eventId: ObjectId | None = Field(default=None, description="only the dead letters of this event")


Limit = Annotated[int, Query(ge=1, le=500)]


@router.get("/webhooks", response_model=Page[WebhookView])
async def list_webhooks(
    context: Context,
    caller: Reader,
    page: PageParams,
    siteId: Annotated[str | None, Query(max_length=64)] = None,
) -> Page[WebhookView]:
    """The webhooks the caller reaches with `webhooks:read`, ordered by id."""
    async with context.store.read() as session:
        return await webhook_service.list_webhooks(session, caller, page, site_id=siteId)


@router.post("/webhooks", status_code=201, response_model=WebhookView)
async def create_webhook(body: WebhookCreate, context: Context, caller: Writer) -> WebhookView:
    """Create a webhook; its credentials are stored encrypted and never returned."""
    view = await webhook_service.create_webhook(
        context.store.transaction,
        caller,
        context.keys.credential_cipher(),
        site_id=body.siteId,
        url=body.url,
        event_types=[e.value for e in body.events],
        auth=body.auth.build(),
        algorithm=body.alg,
        signature_format=body.signatureFormat,
        headers=list(body.headers.items()),
        stations=body.stations,
        charge_points=body.chargePoints,
        now=context.clock.now(),
        allow_private=context.settings.webhook_allow_private,
    )
    return view


@router.get("/webhooks/{webhook_id}", response_model=WebhookDetail)
async def get_webhook(webhook_id: str, context: Context, caller: Reader) -> WebhookDetail:
    async with context.store.read() as session:
        return await webhook_service.get_webhook(session, caller, webhook_id)


@router.patch("/webhooks/{webhook_id}", response_model=WebhookView)
async def update_webhook(webhook_id: str, body: WebhookUpdate, context: Context, caller: Writer) -> WebhookView:
    """Change settings; `enabled: false` stops the lanes at once and keeps their events."""
    view = await webhook_service.update_webhook(
        context.store.transaction,
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
        enabled=body.enabled,
        headers=None if body.headers is None else list(body.headers.items()),
        stations=body.stations,
        charge_points=body.chargePoints,
        expected_version=body.version,
    )
    return view


@router.post("/webhooks/{webhook_id}/recover", response_model=Recovered)
async def recover_events(webhook_id: str, body: RecoverRequest, context: Context, caller: Writer) -> Recovered:
    """Send the events of a time window again, with their original `eventId` and body: each lane's share, in its
    order, joins the tail of the lane behind what waits there. 422 for a window in the future or older than the
    retention of delivered events; 409 when a lane has no room for its share (then nothing is recovered)."""
    async with context.store.transaction() as session:
        return await webhook_recovery.recover_window(
            session,
            caller,
            webhook_id,
            since=body.since,
            until=body.until,
            now=context.clock.now(),
            retention=timedelta(days=context.settings.event_retention_days),
        )


@router.post("/webhooks/{webhook_id}/credentials/rotate", response_model=WebhookView)
async def rotate_credentials(webhook_id: str, body: RotateRequest, context: Context, caller: Writer) -> WebhookView:
    """Use new credentials at once and keep the current ones until `overlapUntil`: meanwhile a 401 or 403 under the
    new ones is retried once with them. 409 when the webhook has no credentials (none) to rotate."""
    return await webhook_rotation.rotate_credentials(
        context.store.transaction,
        caller,
        context.keys.credential_cipher(),
        webhook_id,
        body.auth.build(),
        overlap_until=body.overlapUntil,
        now=context.clock.now(),
        allow_private=context.settings.webhook_allow_private,
        expected_version=body.version,
    )


@router.delete("/webhooks/{webhook_id}", status_code=204, response_class=Response)
async def delete_webhook(webhook_id: str, context: Context, caller: Writer) -> Response:
    async with context.store.transaction() as session:
        await webhook_service.delete_webhook(session, caller, webhook_id, now=context.clock.now())
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
    async with context.store.read() as session:
        return await webhook_dead_letters.list_dead_letters(
            session, caller, webhook_id, page, include_replayed=include == "all"
        )


@router.post("/webhooks/{webhook_id}/dead-letters/replay", response_model=Replayed)
async def replay_dead_letters(
    webhook_id: str, context: Context, caller: Writer, body: ReplayRequest | None = None
) -> Replayed:
    """Send dead letters again, at the tail of their lanes: all that wait, or those of `eventId`."""
    async with context.store.transaction() as session:
        replayed = await webhook_dead_letters.replay_dead_letters(
            session, caller, webhook_id, now=context.clock.now(), event_id=body.eventId if body else None
        )
    return Replayed(replayed=[d.event_id for d in replayed])


@router.get("/webhooks/{webhook_id}/deliveries", response_model=Page[DeliveryView])
async def list_deliveries(
    webhook_id: str,
    context: Context,
    caller: Reader,
    limit: Limit = 50,
    cursor: Annotated[str | None, Cursor(1000)] = None,
    eventType: Annotated[
        str | None, Query(min_length=1, max_length=32, description="an event type, or WebhookTest")
    ] = None,
    eventId: Annotated[str | None, Query(min_length=1, max_length=36)] = None,
    outcome: Literal["delivered", "failed"] | None = None,
) -> Page[DeliveryView]:
    """The delivery log: every attempt (of a lane, or a test event) with its status code or error, duration and
    the first 1 KiB of the response, newest first, kept as long as delivered events (7 days by default)."""
    where = DeliveryFilter(
        event_type=eventType, event_id=eventId, delivered=None if outcome is None else outcome == "delivered"
    )
    async with context.store.read() as session:
        page = PageRequest.of(limit, cursor)
        return await webhook_deliveries.list_deliveries(session, caller, webhook_id, page, where=where)


@router.post("/webhooks/{webhook_id}/test", response_model=DeliveryView)
async def send_test_event(webhook_id: str, context: Context, caller: Writer) -> DeliveryView:
    """Send one `WebhookTest` event (docs/schemas/WebhookTest.json) to the webhook now, signed and authenticated
    like any other, outside its lanes and without retries; the answer is the attempt as the delivery log
    recorded it (`delivered` false when the receiver failed: the request itself succeeded)."""
    return await webhook_test_events.send_test_event(
        context.store.transaction, caller, context.webhook_tests, webhook_id, clock=context.clock
    )


@router.get("/events", tags=["events"], response_model=EventPage)
async def list_events(
    context: Context,
    siteId: Annotated[str, Query(min_length=1, max_length=64)],
    caller: EventReader,
    eventType: Annotated[list[EventType] | None, Query()] = None,
    limit: Limit = 50,
    cursor: Annotated[str | None, Cursor(1000)] = None,
) -> EventPage:
    """The site's events of the retention window, oldest first; poll again from `next` (always set)."""
    async with context.store.read() as session:
        return await event_service.list_events(
            session, caller, site_id=siteId, event_types=eventType, cursor=cursor, limit=limit
        )
