"""A webhook with OAuth2 client credentials, whose partner authorization server is chargenet's own token endpoint:
the sender gets a real RFC 9068 token there, and the receiver accepts the request only if that token validates."""

from __future__ import annotations

from chargenet.auth.errors import InvalidToken, MissingToken
from chargenet.webhooks.lane import Delivered
from chargenet.webhooks.outbound_auth import OAuth2ClientCredentials, TokenAuthMethod
from chargenet.webhooks.sender import Endpoint, WebhookSender
from tests.integration.auth.conftest import Served
from tests.support.keys import signing_keys
from tests.support.receiver import Received, Reply, run_receiver

BODY = b'{"eventId":"e1","eventType":"Authorize","siteId":"site_1","payload":{}}'


async def test_oauth2_webhook_auth_works_against_chargenets_own_token_endpoint(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    credentials = await served.app(tenant.company_id, "events:read")
    assert served.context.auth is not None
    accepted: list[str] = []

    async def receiver_checks_the_token(request: Received) -> Reply:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        try:
            assert served.context.auth is not None and scheme == "Bearer"
            caller = await served.context.auth.authenticate(token)
        except (AssertionError, InvalidToken, MissingToken):
            return Reply(401)
        accepted.append(caller.claims.client_id)
        return Reply(204)

    async with run_receiver(receiver_checks_the_token) as receiver:
        sender = WebhookSender(clock=served.clock, keys=signing_keys, allow_private=True)
        for method in (TokenAuthMethod.BASIC, TokenAuthMethod.POST):
            auth = OAuth2ClientCredentials(
                served.token_url, credentials.client_id, credentials.client_secret, method, None
            )
            result = await sender.send(Endpoint(f"wh_{method.value}", receiver.url, auth), BODY)
            assert result.outcome == Delivered(204)
        await sender.aclose()
    assert accepted == [credentials.client_id, credentials.client_id]
