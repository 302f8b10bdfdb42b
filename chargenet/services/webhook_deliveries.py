"""The delivery log (decisions.md "Delivery log"): every attempt at an event, by a lane or as a test event, with
its status code or error, duration and the first 1 KiB of the response, kept as long as delivered events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field, PlainSerializer
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_webhook
from chargenet.services.views import Instant, View
from chargenet.store.models import WebhookDelivery


class DeliveryView(View):
    """One attempt of the delivery log (decisions.md "Delivery log"): kept 7 days, like delivered events."""

    id: Annotated[int, PlainSerializer(str, return_type=str)]
    webhook_id: str
    event_type: str = Field(description="the event's type, or WebhookTest for a test event")
    event_id: str
    attempt: int = Field(description="1 for the first attempt at the event, 2 for its first retry, ...")
    request_id: str = Field(description="the x-request-id header the attempt carried")
    at: Instant = Field(description="when the attempt started")
    duration_ms: float
    delivered: bool = Field(description="the receiver answered 2xx")
    status: int | None = Field(description="the receiver's HTTP status, when it answered")
    error: str | None = Field(description="why the attempt failed (HTTP 503, timeout after 10 s, ...)")
    response: str | None = Field(description="the first 1 KiB of the response body, as the receiver sent it")


@dataclass(frozen=True, slots=True)
class DeliveryFilter:
    """What the delivery log can be narrowed to (combined with AND)."""

    event_type: str | None = None
    event_id: str | None = None
    delivered: bool | None = None


def delivery_view(row: WebhookDelivery) -> DeliveryView:
    return DeliveryView(
        id=row.id,
        webhook_id=row.webhook_id,
        event_type=row.event_type,
        event_id=row.event_id,
        attempt=row.attempt,
        request_id=row.request_id,
        at=row.at,
        duration_ms=round(row.duration_ms, 1),
        delivered=row.delivered,
        status=row.status,
        error=row.error,
        response=row.response,
    )


async def list_deliveries(
    session: AsyncSession,
    caller: Caller,
    webhook_id: str,
    page: PageRequest | None = None,
    *,
    where: DeliveryFilter | None = None,
) -> Page[DeliveryView]:
    """The webhook's delivery log, newest attempt first, narrowed by `where`."""
    page = page or PageRequest()
    await reachable_webhook(session, caller, Scope.WEBHOOKS_READ, webhook_id)
    before = page.after_number()
    query = (
        select(WebhookDelivery)
        .where(WebhookDelivery.webhook_id == webhook_id)
        .order_by(WebhookDelivery.id.desc())
        .limit(page.fetch)
    )
    if before is not None:
        query = query.where(WebhookDelivery.id < before)
    where = where or DeliveryFilter()
    if where.event_type:
        query = query.where(WebhookDelivery.event_type == where.event_type)
    if where.event_id:
        query = query.where(WebhookDelivery.event_id == where.event_id)
    if where.delivered is not None:
        query = query.where(WebhookDelivery.delivered.is_(where.delivered))
    return page.page([delivery_view(row) for row in await session.scalars(query)], lambda view: str(view.id))
