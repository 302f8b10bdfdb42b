from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from chargenet_partner.webhooks import VerifiedWebhook, verify_request

from chargenet.clock import ManualClock
from chargenet.webhooks.lane import Delivered, Failed
from chargenet.webhooks.outbound_auth import (
    BasicAuth,
    NoAuth,
    OAuth2ClientCredentials,
    OutboundAuth,
    StaticToken,
    TokenAuthMethod,
)
from chargenet.webhooks.sender import Endpoint, WebhookSender
from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat
from tests.support.keys import public_keys, signing_keys
from tests.support.processes import eventually
from tests.support.receiver import Received, Reply, run_receiver

BODY = json.dumps({"eventId": "e1", "eventType": "Authorize", "siteId": "site_1", "payload": {}}).encode()
START = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
ENDLESS = b"y" * 100_000  # a body dripped a byte per 50 ms: it outlasts any attempt's deadline


def _sender(clock: ManualClock | None = None, *, allow_private: bool = True, timeout: float = 2.0) -> WebhookSender:
    """A sender whose attempts have `timeout` seconds: enough, by default, for a receiver that answers at once to
    do so on a busy machine. Its keys are made first, not within the first attempt's deadline (RSA takes a while)."""
    signing_keys()
    return WebhookSender(
        clock=clock or ManualClock(START), keys=signing_keys, allow_private=allow_private, timeout=timeout
    )


def _endpoint(url: str, auth: OutboundAuth | None = None, **kwargs: object) -> Endpoint:
    return Endpoint("wh_1", url, auth or NoAuth(), **kwargs)  # type: ignore[arg-type]


def _verify(request: Received) -> VerifiedWebhook:
    return verify_request(
        method="POST",
        path=request.path,
        headers=request.headers,
        body=request.body,
        keys=public_keys,
        now=START.timestamp(),
    )


async def test_request_carries_json_length_request_id_and_a_verifiable_signature() -> None:
    async with run_receiver() as receiver:
        sender = _sender()
        result = await sender.send(_endpoint(receiver.url), BODY)
        await sender.aclose()
    request = receiver.received[0]
    assert result.outcome == Delivered(204)
    assert (request.method, request.headers["content-type"]) == ("POST", "application/json")
    assert request.headers["content-length"] == str(len(BODY))
    assert uuid.UUID(request.headers["x-request-id"]).version == 4
    verified = _verify(request)
    assert verified.event["eventId"] == "e1"


async def test_rsa_pss_sha512_request_verifies() -> None:
    async with run_receiver() as receiver:
        sender = _sender()
        await sender.send(_endpoint(receiver.url, algorithm=SignatureAlgorithm.RSA_PSS_SHA512), BODY)
        await sender.aclose()
    request = receiver.received[0]
    verified = _verify(request)
    assert verified.algorithm == "rsa-pss-sha512"


async def test_legacy_format_sends_the_legacy_headers() -> None:
    async with run_receiver() as receiver:
        sender = _sender()
        endpoint = _endpoint(
            receiver.url, algorithm=SignatureAlgorithm.RSA_PSS_SHA256, signature_format=SignatureFormat.LEGACY
        )
        await sender.send(endpoint, BODY)
        await sender.aclose()
    assert receiver.received[0].headers["signature-input"].endswith(";headers=@method @path x-request-id")


async def test_every_request_gets_a_fresh_request_id() -> None:
    async with run_receiver() as receiver:
        sender = _sender()
        first = await sender.send(_endpoint(receiver.url), BODY)
        second = await sender.send(_endpoint(receiver.url), BODY)
        await sender.aclose()
    assert first.request_id != second.request_id
    assert [r.headers["x-request-id"] for r in receiver.received] == [first.request_id, second.request_id]


async def test_requests_to_one_endpoint_share_a_pooled_connection() -> None:
    async with run_receiver() as receiver:
        sender = _sender()
        for _ in range(3):
            await sender.send(_endpoint(receiver.url), BODY)
        await sender.aclose()
    assert receiver.connections == 1


async def test_each_webhook_to_one_receiver_has_its_own_pooled_connection() -> None:
    async with run_receiver() as receiver:
        sender = _sender()
        for _ in range(3):
            for webhook_id in ("wh_1", "wh_2"):
                await sender.send(Endpoint(webhook_id, receiver.url, NoAuth()), BODY)
        await sender.aclose()
    assert receiver.connections == 2


async def test_a_forgotten_webhooks_pool_is_closed_after_an_attempts_deadline_and_a_new_one_opened() -> None:
    async with run_receiver() as receiver:
        sender = _sender()
        assert (await sender.send(_endpoint(receiver.url), BODY)).outcome == Delivered(204)
        sender.forget("wh_1")  # its settings changed
        assert len(receiver.open_connections) == 1  # another lane of it may still be sending through it
        await eventually(lambda: not receiver.open_connections)  # closed once an attempt's deadline (2 s) passed
        await sender.send(_endpoint(receiver.url), BODY)
        await sender.aclose()
    assert receiver.connections == 2


async def test_server_error_is_a_failed_attempt() -> None:
    async with run_receiver(lambda _r: Reply(500)) as receiver:
        sender = _sender()
        result = await sender.send(_endpoint(receiver.url), BODY)
        await sender.aclose()
    assert (result.outcome, result.status) == (Failed("HTTP 500"), 500)


async def test_redirect_is_not_followed_and_fails() -> None:
    async with run_receiver(lambda _r: Reply(302, headers={"Location": "/elsewhere"})) as receiver:
        sender = _sender()
        result = await sender.send(_endpoint(receiver.url), BODY)
        await sender.aclose()
    assert result.outcome == Failed("redirect not followed (HTTP 302)")
    assert [r.path for r in receiver.received] == ["/hook"]


async def test_slow_receiver_times_out() -> None:
    async with run_receiver(lambda _r: Reply(200, delay=3600)) as receiver:  # it answers after the test
        sender = _sender(timeout=0.3)
        result = await sender.send(_endpoint(receiver.url), BODY)
        await sender.aclose()
    assert result.outcome == Failed("timeout after 0.3 s")


async def test_reset_connection_is_a_failed_attempt() -> None:
    async with run_receiver(lambda _r: Reply(reset=True)) as receiver:
        sender = _sender()
        result = await sender.send(_endpoint(receiver.url), BODY)
        await sender.aclose()
    assert isinstance(result.outcome, Failed)
    assert result.outcome.error.startswith("connection")


async def test_refused_connection_is_a_failed_attempt() -> None:
    async with run_receiver() as receiver:
        url = receiver.url
    sender = _sender()
    result = await sender.send(_endpoint(url), BODY)
    await sender.aclose()
    assert isinstance(result.outcome, Failed)
    assert result.outcome.error.startswith("connection failed")


async def test_endless_body_after_2xx_is_capped_and_delivered() -> None:
    async with run_receiver(lambda _r: Reply(200, body=b"x" * 100, drip=b"y" * 100)) as receiver:
        sender = WebhookSender(
            clock=ManualClock(START), keys=signing_keys, allow_private=True, timeout=5.0, max_response_bytes=110
        )
        result = await sender.send(_endpoint(receiver.url), BODY)
        await sender.aclose()
    assert result.outcome == Delivered(200)
    assert result.duration_ms < 2000


async def test_2xx_whose_body_trickles_past_the_deadline_is_delivered() -> None:
    async with run_receiver(lambda _r: Reply(200, drip=ENDLESS)) as receiver:
        sender = _sender()
        result = await sender.send(_endpoint(receiver.url), BODY)
        await sender.aclose()
    assert (result.outcome, result.status) == (Delivered(200), 200)  # at the deadline: the body never ends


async def test_connection_left_before_its_body_ended_is_not_reused() -> None:
    replies = iter([Reply(200, drip=ENDLESS), Reply(204)])
    async with run_receiver(lambda _r: next(replies)) as receiver:
        sender = _sender()
        await sender.send(_endpoint(receiver.url), BODY)
        result = await sender.send(_endpoint(receiver.url), BODY)
        await sender.aclose()
    assert (result.outcome, receiver.connections) == (Delivered(204), 2)


async def test_private_target_is_refused_with_a_clear_reason_when_not_allowed() -> None:
    async with run_receiver() as receiver:
        sender = _sender(allow_private=False)
        result = await sender.send(_endpoint(receiver.url), BODY)
        await sender.aclose()
    assert result.outcome == Failed(
        "address refused: 127.0.0.1: 127.0.0.1 is a loopback address; "
        "private webhook targets need CHARGENET_WEBHOOK_ALLOW_PRIVATE=1"
    )
    assert receiver.received == []


async def test_name_resolving_to_a_private_address_is_refused_at_connect_time() -> None:
    async def rebinding(host: str, port: int) -> list[str]:
        return ["10.0.0.7"]

    sender = WebhookSender(clock=ManualClock(START), keys=signing_keys, allow_private=False, resolver=rebinding)
    result = await sender.send(_endpoint("https://partner.example/hook"), BODY)
    await sender.aclose()
    assert isinstance(result.outcome, Failed)
    assert "10.0.0.7 is a private address" in result.outcome.error


async def test_no_auth_sends_no_authorization() -> None:
    async with run_receiver() as receiver:
        sender = _sender()
        await sender.send(_endpoint(receiver.url), BODY)
        await sender.aclose()
    assert "authorization" not in receiver.received[0].headers


async def test_basic_auth_sends_base64_credentials() -> None:
    async with run_receiver() as receiver:
        sender = _sender()
        await sender.send(_endpoint(receiver.url, BasicAuth("partner", "s3cret")), BODY)
        await sender.aclose()
    assert receiver.received[0].headers["authorization"] == "Basic cGFydG5lcjpzM2NyZXQ="


async def test_static_token_is_sent_with_the_token_scheme() -> None:
    async with run_receiver() as receiver:
        sender = _sender()
        await sender.send(_endpoint(receiver.url, StaticToken("tok-123")), BODY)
        await sender.aclose()
    assert receiver.received[0].headers["authorization"] == "Token tok-123"


@pytest.mark.parametrize("auth", [BasicAuth("partner", "wrong"), StaticToken("revoked")], ids=["basic", "token"])
async def test_401_to_basic_or_static_token_auth_fails_the_attempt_once(auth: BasicAuth | StaticToken) -> None:
    async with run_receiver(lambda _r: Reply(401)) as receiver:
        sender = _sender()
        result = await sender.send(_endpoint(receiver.url, auth), BODY)
        await sender.aclose()
    assert (result.outcome, len(receiver.received)) == (Failed("HTTP 401"), 1)


class TokenServer:
    """Answers /token with a fresh bearer token each time and /hook with 200 only for the newest token."""

    def __init__(self, expires_in: int = 900, reject_first_token: bool = False) -> None:
        self.issued: list[str] = []
        self.expires_in = expires_in
        self.reject_first_token = reject_first_token
        self.token_requests: list[Received] = []

    def __call__(self, request: Received) -> Reply:
        if request.path == "/token":
            self.token_requests.append(request)
            token = f"at-{len(self.issued) + 1}"
            self.issued.append(token)
            document = {"access_token": token, "token_type": "Bearer", "expires_in": self.expires_in}
            return Reply(200, json.dumps(document).encode(), {"Content-Type": "application/json"})
        presented = request.headers.get("authorization", "")
        if self.reject_first_token and presented == "Bearer at-1":
            return Reply(401)
        return Reply(204 if presented.startswith("Bearer at-") else 401)


def _oauth(
    url: str, method: TokenAuthMethod = TokenAuthMethod.BASIC, scope: str | None = None
) -> OAuth2ClientCredentials:
    return OAuth2ClientCredentials(url.replace("/hook", "/token"), "client 1", "sec:ret", method, scope)


async def test_oauth2_fetches_a_token_with_basic_client_authentication() -> None:
    tokens = TokenServer()
    async with run_receiver(tokens) as receiver:
        sender = _sender()
        result = await sender.send(_endpoint(receiver.url, _oauth(receiver.url)), BODY)
        await sender.aclose()
    token_request = tokens.token_requests[0]
    assert result.outcome == Delivered(204)
    assert token_request.body == b"grant_type=client_credentials"
    assert token_request.headers["authorization"] == "Basic Y2xpZW50JTIwMTpzZWMlM0FyZXQ="
    assert receiver.received[1].headers["authorization"] == "Bearer at-1"


async def test_oauth2_post_method_sends_credentials_and_scope_in_the_body() -> None:
    tokens = TokenServer()
    async with run_receiver(tokens) as receiver:
        sender = _sender()
        await sender.send(_endpoint(receiver.url, _oauth(receiver.url, TokenAuthMethod.POST, "hooks")), BODY)
        await sender.aclose()
    request = tokens.token_requests[0]
    assert request.body == b"grant_type=client_credentials&scope=hooks&client_id=client+1&client_secret=sec%3Aret"
    assert "authorization" not in request.headers


async def test_oauth2_token_is_cached_between_requests() -> None:
    tokens = TokenServer()
    async with run_receiver(tokens) as receiver:
        sender = _sender()
        for _ in range(3):
            await sender.send(_endpoint(receiver.url, _oauth(receiver.url)), BODY)
        await sender.aclose()
    assert len(tokens.token_requests) == 1


async def test_oauth2_token_is_renewed_shortly_before_expiry() -> None:
    tokens = TokenServer(expires_in=900)
    clock = ManualClock(START)
    async with run_receiver(tokens) as receiver:
        sender = _sender(clock)
        await sender.send(_endpoint(receiver.url, _oauth(receiver.url)), BODY)
        clock.advance(839)
        await sender.send(_endpoint(receiver.url, _oauth(receiver.url)), BODY)
        clock.advance(2)
        await sender.send(_endpoint(receiver.url, _oauth(receiver.url)), BODY)
        await sender.aclose()
    assert tokens.issued == ["at-1", "at-2"]


async def test_oauth2_renews_the_token_once_on_401() -> None:
    tokens = TokenServer(reject_first_token=True)
    async with run_receiver(tokens) as receiver:
        sender = _sender()
        result = await sender.send(_endpoint(receiver.url, _oauth(receiver.url)), BODY)
        await sender.aclose()
    assert result.outcome == Delivered(204)
    assert [r.headers.get("authorization") for r in receiver.received if r.path == "/hook"] == [
        "Bearer at-1",
        "Bearer at-2",
    ]


async def test_oauth2_second_401_fails_the_attempt_without_a_third_token() -> None:
    tokens = TokenServer()
    async with run_receiver(lambda r: tokens(r) if r.path == "/token" else Reply(401)) as receiver:
        sender = _sender()
        result = await sender.send(_endpoint(receiver.url, _oauth(receiver.url)), BODY)
        await sender.aclose()
    assert result.outcome == Failed("HTTP 401")
    assert len(tokens.issued) == 2


async def test_token_endpoint_error_fails_the_attempt_with_its_error_code() -> None:
    def answer(request: Received) -> Reply:
        return Reply(401, b'{"error": "invalid_client"}', {"Content-Type": "application/json"})

    async with run_receiver(answer) as receiver:
        sender = _sender()
        result = await sender.send(_endpoint(receiver.url, _oauth(receiver.url)), BODY)
        await sender.aclose()
    assert result.outcome == Failed("token endpoint answered HTTP 401 (invalid_client)")
    assert [r.path for r in receiver.received] == ["/token"]


async def test_token_answer_over_64_kib_fails_the_attempt() -> None:
    def answer(request: Received) -> Reply:
        if request.path != "/token":
            return Reply(204)
        document = {"access_token": "at-1", "token_type": "Bearer", "padding": "x" * 70_000}
        return Reply(200, json.dumps(document).encode(), {"Content-Type": "application/json"})

    async with run_receiver(answer) as receiver:
        sender = _sender()
        result = await sender.send(_endpoint(receiver.url, _oauth(receiver.url)), BODY)
        await sender.aclose()
    assert result.outcome == Failed("token endpoint answer too large (over 65536 bytes)")
    assert [r.path for r in receiver.received] == ["/token"]
