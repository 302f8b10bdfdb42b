"""The verifier on Signature-Input, Signature and Content-Digest fields that are not what RFC 8941 and RFC 9421
allow: each is refused with Reason.MALFORMED and the verifier's own message, never a raw parser exception."""

from __future__ import annotations

import json

import pytest
from chargenet_partner.webhooks import (
    Reason,
    WebhookVerificationError,
    check_content_digest,
    read_claim,
    verify_request,
)
from cryptography.hazmat.primitives.asymmetric import ed25519

from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat, webhook_signature_headers

BODY = json.dumps({"eventId": "5b1f", "eventType": "Authorize"}).encode()
NOW = 1_767_225_600
KEY = ed25519.Ed25519PrivateKey.generate()
REQUEST_ID = "9d1c7e0a-5f39-4a8e-9b7e-3c0d5c1f2a77"
COVERED = '("@method" "@path" "x-request-id" "content-digest")'


def _headers(signature_format: SignatureFormat = SignatureFormat.RFC9421, key_id: str = "sign") -> dict[str, str]:
    headers = {"x-request-id": REQUEST_ID}
    headers |= webhook_signature_headers(
        url="https://partner.example/hooks",
        request_id=REQUEST_ID,
        body=BODY,
        created=NOW,
        key=KEY,
        algorithm=SignatureAlgorithm.ED25519,
        signature_format=signature_format,
        key_id=key_id,
    )
    return headers


def _refusal(headers: dict[str, str], *, allow_legacy: bool = False) -> WebhookVerificationError:
    with pytest.raises(WebhookVerificationError) as caught:
        verify_request(
            method="POST",
            path="/hooks",
            headers=headers,
            body=BODY,
            keys=lambda kid, kty: KEY.public_key(),
            now=NOW,
            allow_legacy=allow_legacy,
        )
    return caught.value


def test_signature_params_are_serialized_back_to_the_signers_text() -> None:
    headers = _headers()
    claim = read_claim(headers)
    assert claim.signature_params == headers["Signature-Input"].removeprefix("sig1=")
    assert (claim.created, claim.key_id, claim.algorithm) == (NOW, "sign", "ed25519")


def test_quoted_key_id_is_escaped_in_the_signature_params() -> None:
    text = f'{COVERED};created={NOW};keyid="s\\"q";alg="ed25519"'
    claim = read_claim({"Signature-Input": f"sig1={text}", "Signature": "sig1=:AAEC:"})
    assert (claim.key_id, claim.signature_params) == ('s"q', text)


@pytest.mark.parametrize(
    "signature_input",
    [
        "sig1=(",
        'sig1=("@method" "open',
        f"Sig1={COVERED};created={NOW}",
        f'sig1={COVERED};created=1234567890123456;keyid="sign";alg="ed25519"',
        f'sig1={COVERED};created={NOW};keyid="\\n";alg="ed25519"',
        f'sig1={COVERED};created={NOW};keyid="sign";alg="ed25519",',
        f"sig1={COVERED};created={NOW} sig2=1",
        f'sig1={COVERED};created={NOW};keyid="sign";alg="ed25519", sig1={COVERED}',
        f'sig1={COVERED};created={NOW};keyid="sïgn";alg="ed25519"',
        f'sig1={COVERED};created={NOW};keyid="s\udcffgn";alg="ed25519"',
    ],
)
def test_malformed_signature_input_is_refused(signature_input: str) -> None:
    error = _refusal(_headers() | {"Signature-Input": signature_input})
    assert error.reason is Reason.MALFORMED
    assert error.detail.startswith("signature headers: ")


@pytest.mark.parametrize(
    "signature",
    ["sig1=:not base64!:", "sig1=:AAEC", "sig1=:AAEC:, sig1=:AAEC:", "sig1=:AAEC:;", "sig1=:AAEC:é"],
)
def test_malformed_signature_is_refused(signature: str) -> None:
    error = _refusal(_headers() | {"Signature": signature})
    assert error.reason is Reason.MALFORMED
    assert error.detail.startswith("signature headers: ")


@pytest.mark.parametrize(
    ("field", "value", "detail"),
    [
        ("Signature-Input", "sig1", "Signature-Input must be an inner list, Signature bytes"),
        ("Signature-Input", 'sig1="@method"', "Signature-Input must be an inner list, Signature bytes"),
        ("Signature", "sig1=sign", "Signature-Input must be an inner list, Signature bytes"),
        ("Signature", "sig1=(:AAEC:)", "Signature-Input must be an inner list, Signature bytes"),
        ("Signature", "sig2=:AAEC:", "expected exactly one signature, with the same label"),
        ("Signature-Input", f'sig1=("@method";bs "@path");created={NOW}', "covered components are plain strings here"),
        ("Signature-Input", f"sig1=(method);created={NOW}", "covered components are plain strings here"),
        (
            "Signature-Input",
            f'sig1={COVERED};created={NOW}.5;keyid="sign";alg="ed25519"',
            "created (integer), keyid and alg (strings) are required",
        ),
        (
            "Signature-Input",
            f"sig1={COVERED};created={NOW};keyid=sign;alg=ed25519",
            "created (integer), keyid and alg (strings) are required",
        ),
        (
            "Signature-Input",
            f'sig1={COVERED};created=?1;keyid="sign";alg="ed25519"',
            "created (integer), keyid and alg (strings) are required",
        ),
    ],
)
def test_well_formed_fields_of_the_wrong_shape_are_refused(field: str, value: str, detail: str) -> None:
    error = _refusal(_headers() | {field: value})
    assert (error.reason, error.detail) == (Reason.MALFORMED, detail)


@pytest.mark.parametrize("digest", ["sha-256=:AAEC", "sha-256=:AAEC:, sha-256=:AAEC:", "sha-256=:AAEC:,", "sha-256=é"])
def test_malformed_content_digest_is_refused(digest: str) -> None:
    with pytest.raises(WebhookVerificationError) as caught:
        check_content_digest({"Content-Digest": digest}, BODY)
    assert caught.value.reason is Reason.MALFORMED
    assert caught.value.detail.startswith("Content-Digest: ")


def test_content_digest_member_that_is_not_bytes_is_refused() -> None:
    with pytest.raises(WebhookVerificationError) as caught:
        check_content_digest({"Content-Digest": 'sha-256="abc"'}, BODY)
    assert caught.value.reason is Reason.MALFORMED
    assert caught.value.detail == "Content-Digest sha-256 is not a byte sequence"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("Signature", "sig1=AAEC\u00e9"),
        ("Signature-Input", f"sig1=created={NOW}\u00b2;keyId=sign;alg=ed25519;headers=@method @path x-request-id"),
        ("Signature-Input", f"sig1=created={NOW};keyId=si\x01gn;alg=ed25519;headers=@method @path x-request-id"),
    ],
)
def test_malformed_legacy_fields_are_refused(field: str, value: str) -> None:
    error = _refusal(_headers(SignatureFormat.LEGACY) | {field: value}, allow_legacy=True)
    assert error.reason is Reason.MALFORMED
