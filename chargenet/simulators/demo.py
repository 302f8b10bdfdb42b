"""`make demo`'s partner: the reference receiver mounted in the demo server at /demo-partner/hook, subscribed
to every event type of the demo site, printing each event once its signature is verified with the JWKS the
server publishes. A newcomer sees signed, verified events arrive as the station and meter simulators act."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

from starlette.routing import Mount

from chargenet.domain.events import EventType
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import every_page
from chargenet.webhooks.outbound_auth import NoAuth

if TYPE_CHECKING:
    from chargenet_partner.webhooks import VerifiedWebhook

    from chargenet.context import AppContext

log = logging.getLogger(__name__)

MOUNT = "/demo-partner"


async def add_demo_partner(context: AppContext, site_id: str) -> str:
    """Mount the receiver and make sure the demo site has a webhook to it; returns the webhook URL."""
    # The SDK is its own distribution; only the demo and `chargenet partner receive` need it.
    from chargenet_partner.webhooks import AsyncWebhookVerifier

    from chargenet.simulators.partner import create_receiver, json_line

    settings = context.settings
    url = f"{settings.public_url}{MOUNT}/hook"

    def show(verified: VerifiedWebhook) -> None:
        sys.stdout.write(f"partner received {json_line(verified)}\n")
        sys.stdout.flush()

    verifier = AsyncWebhookVerifier(f"{settings.auth_url}/.well-known/jwks.json")
    context.routes.append(Mount(MOUNT, app=create_receiver(verifier, show, "/hook")))
    context.on_shutdown.append(verifier.aclose)
    async with context.store.read() as session:
        existing = await every_page(
            lambda page: webhook_service.list_webhooks(session, OPERATOR, page, site_id=site_id)
        )
    if not any(w.url == url for w in existing):
        await webhook_service.create_webhook(
            context.store.transaction,
            OPERATOR,
            context.keys.credential_cipher(),
            site_id=site_id,
            url=url,
            event_types=[t.value for t in EventType],
            auth=NoAuth(),
            now=context.clock.now(),
            allow_private=True,
        )
    return url
