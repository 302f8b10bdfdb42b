"""The test event (decisions.md "Test event"): one `WebhookTest` envelope sent to a webhook outside its lanes,
signed and authenticated like any other, once, without retries, and logged with the delivery log's attempts.
"""

from __future__ import annotations

import json
import uuid

from chargenet.clock import Clock
from chargenet.domain.events import WEBHOOK_TEST, build_test_event
from chargenet.domain.scopes import Scope
from chargenet.errors import Conflict
from chargenet.ports import WebhookTests
from chargenet.services.callers import Caller
from chargenet.services.reach import reachable_webhook
from chargenet.services.webhook_deliveries import DeliveryView, delivery_view
from chargenet.services.webhooks import audit_change
from chargenet.store.db import Transactions
from chargenet.store.models import WebhookDelivery


async def send_test_event(
    transaction: Transactions,
    caller: Caller,
    tests: WebhookTests | None,
    webhook_id: str,
    *,
    clock: Clock,
) -> DeliveryView:
    """Send one `WebhookTest` envelope (decisions.md "Test event") to the webhook, signed and authenticated like any
    other, outside its lanes, once, without retries; record the attempt in the delivery log and the audit log
    together. A webhook that is disabled still gets it: a test is how an operator checks it before enabling it.

    The request is sent between two short transactions (a slow receiver must not hold the store's writer lock).
    Raises NotFound, Forbidden for a viewer, Conflict when this process sends no webhooks (`tests` is None)."""
    async with transaction() as session:
        row = await reachable_webhook(session, caller, Scope.WEBHOOKS_WRITE, webhook_id, change="sending a test event")
        site_id = row.site_id
    if tests is None:
        raise Conflict("this process sends no webhooks; a serving process (chargenet serve) sends test events")
    event = build_test_event(
        event_id=str(uuid.uuid4()),
        site_id=site_id,
        raised_at=clock.now(),
        webhook_id=webhook_id,
        requested_by=caller.actor.who,
    )
    body = json.dumps(event.to_json_dict(), separators=(",", ":"), ensure_ascii=False).encode()
    sent = await tests.send_once(webhook_id, body)
    async with transaction() as session:
        # Checked again: the webhook may have been deleted (or the caller's reach changed) while it was sent.
        row = await reachable_webhook(session, caller, Scope.WEBHOOKS_WRITE, webhook_id, change="sending a test event")
        logged = WebhookDelivery(
            webhook_id=webhook_id,
            event_type=WEBHOOK_TEST,
            event_id=event.eventId,
            attempt=1,
            request_id=sent.request_id,
            at=sent.started_at,
            duration_ms=sent.duration_ms,
            delivered=sent.error is None,
            status=sent.status,
            error=sent.error,
            response=sent.response,
        )
        session.add(logged)
        await session.flush()
        outcome = "delivered" if sent.error is None else sent.error
        await audit_change(
            session, caller, row, "webhook.test", clock.now(), {"event": event.eventId, "outcome": outcome}
        )
        return delivery_view(logged)
