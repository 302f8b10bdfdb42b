from __future__ import annotations

import json
from typing import Any

import pytest
from chargenet_partner.webhooks import (
    AsyncWebhookVerifier,
    PublicKey,
    Reason,
    WebhookVerificationError,
    WebhookVerifier,
    parse_jwks,
    verify_request,
)
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat, webhook_signature_headers
from tests.support.jwks import jwk, serve_jwks

URL = "https://partner.example/hooks/chargenet"
BODY = json.dumps({"eventId": "5b1f", "eventType": "Authorize", "siteId": "site_1"}).encode()
NOW = 1_767_225_600
LEGACY = SignatureFormat.LEGACY
ED_KEY = ed25519.Ed25519PrivateKey.generate()
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _headers(
    *,
    key: Any = ED_KEY,
    algorithm: SignatureAlgorithm = SignatureAlgorithm.ED25519,
    signature_format: SignatureFormat = SignatureFormat.RFC9421,
    created: int = NOW,
    body: bytes = BODY,
    key_id: str = "sign",
) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "x-request-id": "9d1c7e0a-5f39-4a8e-9b7e-3c0d5c1f2a77"}
    headers |= webhook_signature_headers(
        url=URL,
        request_id=headers["x-request-id"],
        body=body,
        created=created,
        key=key,
        algorithm=algorithm,
        signature_format=signature_format,
        key_id=key_id,
    )
    return headers


def _keys(kid: str, kty: str) -> PublicKey | None:
    keys: dict[tuple[str, str], PublicKey] = {
        ("sign", "OKP"): ED_KEY.public_key(),
        ("sign", "RSA"): RSA_KEY.public_key(),
    }
    return keys.get((kid, kty))


def _verify(headers: dict[str, str], body: bytes = BODY, **options: Any) -> Any:
    return verify_request(
        method="POST", path="/hooks/chargenet", headers=headers, body=body, keys=_keys, now=NOW, **options
    )


def _reason(headers: dict[str, str], body: bytes = BODY, **options: Any) -> Reason:
    with pytest.raises(WebhookVerificationError) as caught:
        _verify(headers, body, **options)
    return caught.value.reason


def test_ed25519_request_verifies_and_yields_the_event() -> None:
    verified = _verify(_headers())
    assert (verified.event["eventId"], verified.algorithm, verified.key_id) == ("5b1f", "ed25519", "sign")


def test_rsa_pss_sha512_request_verifies() -> None:
    assert _verify(_headers(key=RSA_KEY, algorithm=SignatureAlgorithm.RSA_PSS_SHA512)).algorithm == "rsa-pss-sha512"


def test_header_names_are_matched_case_insensitively() -> None:
    headers = {name.lower(): value for name, value in _headers().items()}
    assert _verify(headers).request_id == headers["x-request-id"]


def test_changed_body_with_its_own_digest_fails_the_signature() -> None:
    other = b'{"eventId":"evil"}'
    headers = _headers() | {"Content-Digest": _headers(body=other)["Content-Digest"]}
    assert _reason(headers, other) is Reason.BAD_SIGNATURE


def test_changed_body_fails_the_content_digest() -> None:
    assert _reason(_headers(), b'{"eventId":"evil"}') is Reason.DIGEST_MISMATCH


def test_changed_request_id_fails_the_signature() -> None:
    assert _reason(_headers() | {"x-request-id": "another"}) is Reason.BAD_SIGNATURE


def test_other_path_fails_the_signature() -> None:
    with pytest.raises(WebhookVerificationError, match="bad_signature"):
        verify_request(method="POST", path="/elsewhere", headers=_headers(), body=BODY, keys=_keys, now=NOW)


def test_signature_older_than_max_age_is_refused() -> None:
    assert _reason(_headers(created=NOW - 301)) is Reason.TOO_OLD


def test_signature_created_in_the_future_is_refused() -> None:
    assert _reason(_headers(created=NOW + 6)) is Reason.IN_FUTURE


def test_other_key_id_is_refused() -> None:
    assert _reason(_headers(key_id="sign-old")) is Reason.UNKNOWN_KEY_ID


def test_signature_by_another_key_is_refused() -> None:
    assert _reason(_headers(key=ed25519.Ed25519PrivateKey.generate())) is Reason.BAD_SIGNATURE


def test_missing_signature_header_is_refused() -> None:
    headers = _headers()
    del headers["Signature"]
    assert _reason(headers) is Reason.MISSING_HEADER


def test_signature_not_covering_the_digest_is_refused() -> None:
    headers = _headers()
    headers["Signature-Input"] = headers["Signature-Input"].replace(' "content-digest"', "")
    assert _reason(headers) is Reason.NOT_COVERED


def test_unknown_algorithm_is_refused() -> None:
    headers = _headers()
    headers["Signature-Input"] = headers["Signature-Input"].replace('alg="ed25519"', 'alg="hmac-sha256"')
    assert _reason(headers) is Reason.UNSUPPORTED_ALGORITHM


def test_legacy_request_is_refused_unless_allowed() -> None:
    headers = _headers(
        key=RSA_KEY, algorithm=SignatureAlgorithm.RSA_PSS_SHA256, signature_format=SignatureFormat.LEGACY
    )
    assert _reason(headers) is Reason.LEGACY_REFUSED


def test_legacy_rsa_pss_sha256_request_verifies_when_allowed() -> None:
    headers = _headers(
        key=RSA_KEY, algorithm=SignatureAlgorithm.RSA_PSS_SHA256, signature_format=SignatureFormat.LEGACY
    )
    assert _verify(headers, allow_legacy=True).legacy


def test_legacy_request_with_changed_request_id_is_refused() -> None:
    headers = _headers(signature_format=SignatureFormat.LEGACY) | {"x-request-id": "changed"}
    assert _reason(headers, allow_legacy=True) is Reason.BAD_SIGNATURE


def test_jwks_parsing_keeps_ed25519_and_rsa_keys_under_the_same_kid() -> None:
    keys = parse_jwks({"keys": [jwk("sign", ED_KEY.public_key()), jwk("sign", RSA_KEY.public_key()), {"kty": "EC"}]})
    assert set(keys) == {("sign", "OKP"), ("sign", "RSA")}


def test_verifier_fetches_the_jwks_once_and_caches_it() -> None:
    with serve_jwks({"keys": [jwk("sign", ED_KEY.public_key())]}) as server:
        verifier = WebhookVerifier(server.url, now=lambda: NOW)
        for _ in range(3):
            verifier.verify(method="POST", path="/hooks/chargenet", headers=_headers(), body=BODY)
        verifier.close()
    assert server.requests == 1


def test_verifier_refetches_the_jwks_after_a_key_rotation() -> None:
    clock = [float(NOW)]
    new_key = ed25519.Ed25519PrivateKey.generate()
    with serve_jwks({"keys": [jwk("sign", ED_KEY.public_key())]}) as server:
        verifier = WebhookVerifier(server.url, now=lambda: clock[0])
        verifier.verify(method="POST", path="/hooks/chargenet", headers=_headers(), body=BODY)
        server.document = {"keys": [jwk("sign", new_key.public_key())]}
        clock[0] += 60
        headers = _headers(key=new_key, created=NOW + 60)
        verified = verifier.verify(method="POST", path="/hooks/chargenet", headers=headers, body=BODY)
        verifier.close()
    assert (verified.event["eventId"], server.requests) == ("5b1f", 2)


def test_verifier_does_not_refetch_for_every_bad_signature() -> None:
    with serve_jwks({"keys": [jwk("sign", ED_KEY.public_key())]}) as server:
        verifier = WebhookVerifier(server.url, now=lambda: NOW)
        bad = _headers(key=ed25519.Ed25519PrivateKey.generate())
        for _ in range(3):
            with pytest.raises(WebhookVerificationError):
                verifier.verify(method="POST", path="/hooks/chargenet", headers=bad, body=BODY)
        verifier.close()
    assert server.requests == 1


def test_unreachable_jwks_is_reported_as_such() -> None:
    verifier = WebhookVerifier("http://127.0.0.1:9/jwks.json", now=lambda: NOW)
    with pytest.raises(WebhookVerificationError) as caught:
        verifier.verify(method="POST", path="/hooks/chargenet", headers=_headers(), body=BODY)
    verifier.close()
    assert caught.value.reason is Reason.JWKS_UNAVAILABLE


async def test_async_verifier_verifies_with_the_fetched_jwks() -> None:
    with serve_jwks({"keys": [jwk("sign", RSA_KEY.public_key())]}) as server:
        verifier = AsyncWebhookVerifier(server.url, now=lambda: NOW)
        headers = _headers(key=RSA_KEY, algorithm=SignatureAlgorithm.RSA_PSS_SHA512)
        verified = await verifier.verify(method="POST", path="/hooks/chargenet", headers=headers, body=BODY)
        await verifier.aclose()
    assert verified.algorithm == "rsa-pss-sha512"
