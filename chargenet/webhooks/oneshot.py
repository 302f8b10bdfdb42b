"""One request to a webhook outside its lanes: the test event (decisions.md "Test event").

The request is built, signed and authenticated exactly as a lane's attempt is (the same `WebhookSender`, so the
same headers, keys, outbound auth and address checks), but it is sent once, with no retry and no lease, and its
outcome is handed back to the caller, which records it in the delivery log.
"""

from __future__ import annotations

from collections.abc import Callable

from chargenet.auth.keys import SigningKeys
from chargenet.clock import Clock
from chargenet.errors import NotFound
from chargenet.keys import CredentialCipher, KeyStore
from chargenet.ports import SentRequest
from chargenet.store.db import Store
from chargenet.store.models import Webhook
from chargenet.webhooks.endpoints import endpoint_of
from chargenet.webhooks.sender import WebhookSender, WebhookSigningKeys


class OneShotSender:
    """`chargenet.ports.WebhookTests` over a `WebhookSender` (a serving process shares its lanes' sender)."""

    def __init__(self, store: Store, sender: WebhookSender, cipher: CredentialCipher) -> None:
        self.store = store
        self.sender = sender
        self.cipher = cipher

    async def send_once(self, webhook_id: str, body: bytes) -> SentRequest:
        async with self.store.transaction() as session:
            row = await session.get(Webhook, webhook_id)
            if row is None:
                raise NotFound("webhook", webhook_id)
            endpoint = endpoint_of(row, self.cipher)
        result = await self.sender.send(endpoint, body)
        return result.sent()

    async def aclose(self) -> None:
        await self.sender.aclose()


def published_keys(keys: KeyStore, clock: Clock) -> Callable[[], WebhookSigningKeys]:
    """The webhook keys published in the JWKS under kid `sign`, read from the keys folder (created on first use,
    as the authorization server does), for a process that runs no authorization server (`chargenet admin`)."""
    signing = SigningKeys(keys)
    signing.ensure(clock.now())

    def current() -> WebhookSigningKeys:
        pair = signing.webhook_keys()
        return WebhookSigningKeys(ed25519=pair.ed25519, rsa=pair.rsa, key_id=pair.kid)

    return current


def standalone(store: Store, keys: KeyStore, clock: Clock, *, allow_private: bool) -> OneShotSender:
    """A sender of its own, for a process that delivers no webhooks (`chargenet admin webhook test`)."""
    sender = WebhookSender(clock=clock, keys=published_keys(keys, clock), allow_private=allow_private)
    return OneShotSender(store, sender, keys.credential_cipher())
