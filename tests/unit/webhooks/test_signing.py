from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ed25519, padding, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key
from http_message_signatures import HTTPMessageVerifier, MappingKeyResolver

from chargenet.errors import InvalidInput
from chargenet.webhooks.signing import (
    SignatureAlgorithm,
    SignatureFormat,
    SignatureParameters,
    algorithm_class,
    content_digest,
    sign_message,
    webhook_signature_headers,
)

DATA = Path(__file__).parents[2] / "data" / "rfc9421"
VECTORS: dict[str, Any] = json.loads((DATA / "appendix-b2-vectors.json").read_text())
URL = "https://partner.example/hooks/chargenet?x=1"
BODY = b'{"eventId":"3f2c","eventType":"Authorize"}'
REQUEST_ID = "0b6f1f4e-8d7e-4a36-9d7b-0c0e6f0b8a11"
CREATED = 1_767_225_600


def _vector(section: str) -> dict[str, Any]:
    return next(v for v in VECTORS["vectors"] if v["section"] == section)


def _private(name: str) -> Any:
    return load_pem_private_key((DATA / f"{name}.key").read_bytes(), password=None)


def _public(name: str) -> Any:
    return load_pem_public_key((DATA / f"{name}.pem").read_bytes())


def _components(signature_input: str) -> list[str]:
    inner = signature_input.split("=(", 1)[1].split(")", 1)[0]
    return [item.strip('"') for item in inner.split()] if inner else []


def _sign_vector(section: str) -> Any:
    vector = _vector(section)
    request = VECTORS["request"]
    label = vector["Signature-Input"].split("=", 1)[0]
    nonce = (
        vector["Signature-Input"].split('nonce="', 1)[1].rstrip('"') if "nonce=" in vector["Signature-Input"] else None
    )
    return sign_message(
        method=request["method"],
        url=request["url"],
        headers=request["headers"].items(),
        components=_components(vector["Signature-Input"]),
        parameters=SignatureParameters(created=1618884473, key_id=vector["key"], alg=None, nonce=nonce),
        key=_private(vector["key"]),
        algorithm=SignatureAlgorithm(vector["alg"]),
        label=label,
    )


def _verify(headers: dict[str, str], algorithm: SignatureAlgorithm, public_key: Any, url: str = URL) -> Any:
    class Request:
        method = "POST"

        def __init__(self) -> None:
            self.url = url
            self.headers = {"x-request-id": REQUEST_ID, **headers}

    verifier = HTTPMessageVerifier(
        signature_algorithm=algorithm_class(algorithm),
        key_resolver=MappingKeyResolver(public_keys={"sign": public_key}, private_keys={}),
    )
    return verifier.verify(Request(), max_age=None, body=BODY)


def _webhook_headers(key: Any, **options: Any) -> dict[str, str]:
    """The webhook's signature headers with `key`, over URL, REQUEST_ID, BODY and CREATED unless `options` say
    otherwise."""
    return webhook_signature_headers(
        **{"url": URL, "request_id": REQUEST_ID, "body": BODY, "created": CREATED, "key": key, **options}
    )


def _legacy_base(alg: str) -> bytes:
    """The RFC 9421 signature base a legacy signature is made over: method, path and request id."""
    return (
        '"@method": POST\n"@path": /hooks/chargenet\n'
        f'"x-request-id": {REQUEST_ID}\n'
        f'"@signature-params": ("@method" "@path" "x-request-id");created={CREATED};keyid="sign";alg="{alg}"'
    ).encode()


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def test_rfc9421_b26_ed25519_signature_is_reproduced_byte_for_byte() -> None:
    signed = _sign_vector("B.2.6")
    vector = _vector("B.2.6")
    assert signed.signature_input == vector["Signature-Input"]
    assert signed.signature == vector["Signature"]


@pytest.mark.parametrize("section", ["B.2.1", "B.2.3"])
def test_rfc9421_rsa_pss_vector_signature_verifies_over_our_signature_base(section: str) -> None:
    signed = _sign_vector(section)
    published = base64.b64decode(_vector(section)["Signature"].split("=:", 1)[1].rstrip(":"))
    _public("test-key-rsa-pss").verify(
        published,
        signed.signature_base,
        padding.PSS(mgf=padding.MGF1(hashes.SHA512()), salt_length=64),
        hashes.SHA512(),
    )
    assert signed.signature_input == _vector(section)["Signature-Input"]


def test_content_digest_is_sha256_of_the_body_as_a_byte_sequence() -> None:
    expected = base64.b64encode(hashlib.sha256(BODY).digest()).decode()
    assert content_digest(BODY) == f"sha-256=:{expected}:"


def test_rfc9421_headers_cover_method_path_request_id_and_content_digest() -> None:
    headers = _webhook_headers(ed25519.Ed25519PrivateKey.generate())
    assert headers["Signature-Input"] == (
        f'sig1=("@method" "@path" "x-request-id" "content-digest");created={CREATED};keyid="sign";alg="ed25519"'
    )
    assert headers["Content-Digest"] == content_digest(BODY)
    assert headers["Signature"].startswith("sig1=:")


def test_ed25519_webhook_signature_verifies_with_an_independent_verifier() -> None:
    key = ed25519.Ed25519PrivateKey.generate()
    headers = _webhook_headers(key)
    results = _verify(headers, SignatureAlgorithm.ED25519, key.public_key())
    assert results[0].body == BODY


def test_rsa_pss_sha512_webhook_signature_verifies_with_an_independent_verifier(rsa_key: rsa.RSAPrivateKey) -> None:
    headers = _webhook_headers(rsa_key, algorithm=SignatureAlgorithm.RSA_PSS_SHA512)
    results = _verify(headers, SignatureAlgorithm.RSA_PSS_SHA512, rsa_key.public_key())
    assert results[0].parameters["alg"] == "rsa-pss-sha512"


def test_changed_body_fails_the_content_digest_check() -> None:
    key = ed25519.Ed25519PrivateKey.generate()
    headers = _webhook_headers(key, body=b'{"a":2}')
    with pytest.raises(Exception, match="Content-Digest"):
        _verify(headers, SignatureAlgorithm.ED25519, key.public_key())


def test_legacy_headers_use_the_unquoted_per_event_syntax(rsa_key: rsa.RSAPrivateKey) -> None:
    headers = _webhook_headers(
        rsa_key, algorithm=SignatureAlgorithm.RSA_PSS_SHA256, signature_format=SignatureFormat.LEGACY
    )
    assert headers["Signature-Input"] == (
        f"sig1=created={CREATED};keyId=sign;alg=rsa-pss-sha256;headers=@method @path x-request-id"
    )
    assert set(headers) == {"Signature-Input", "Signature"}
    assert headers["Signature"].startswith("sig1=") and not headers["Signature"].startswith("sig1=:")


def test_legacy_signature_is_made_over_the_rfc9421_base_of_the_three_components(rsa_key: rsa.RSAPrivateKey) -> None:
    headers = _webhook_headers(
        rsa_key, algorithm=SignatureAlgorithm.RSA_PSS_SHA256, signature_format=SignatureFormat.LEGACY
    )
    signature = base64.b64decode(headers["Signature"].removeprefix("sig1="))
    rsa_key.public_key().verify(
        signature,
        _legacy_base("rsa-pss-sha256"),
        padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32),
        hashes.SHA256(),
    )


def test_legacy_ed25519_signature_verifies_over_the_same_base() -> None:
    key = ed25519.Ed25519PrivateKey.generate()
    headers = _webhook_headers(key, signature_format=SignatureFormat.LEGACY)
    key.public_key().verify(base64.b64decode(headers["Signature"].removeprefix("sig1=")), _legacy_base("ed25519"))


def test_rsa_pss_sha256_is_refused_in_the_rfc9421_format(rsa_key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(InvalidInput, match="legacy"):
        _webhook_headers(rsa_key, algorithm=SignatureAlgorithm.RSA_PSS_SHA256)


def test_key_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(InvalidInput, match="RSAPrivateKey"):
        _webhook_headers(ed25519.Ed25519PrivateKey.generate(), algorithm=SignatureAlgorithm.RSA_PSS_SHA512)


@pytest.mark.parametrize(
    ("url", "signature_format"),
    [
        (URL, SignatureFormat.RFC9421),
        ("http://127.0.0.1:9000", SignatureFormat.RFC9421),
        ("https://partner.example/a%20b/hook;v=1", SignatureFormat.RFC9421),
        (URL, SignatureFormat.LEGACY),
    ],
)
def test_webhook_signature_base_is_the_general_signers_base(url: str, signature_format: SignatureFormat) -> None:
    key = ed25519.Ed25519PrivateKey.generate()
    headers = _webhook_headers(key, url=url, signature_format=signature_format)
    legacy = signature_format is SignatureFormat.LEGACY
    covered = [("x-request-id", REQUEST_ID)] + ([] if legacy else [("Content-Digest", content_digest(BODY))])
    general = sign_message(
        method="POST",
        url=url,
        headers=covered,
        components=["@method", "@path", "x-request-id"] + ([] if legacy else ["content-digest"]),
        parameters=SignatureParameters(created=CREATED, key_id="sign", alg=SignatureAlgorithm.ED25519),
        key=key,
        algorithm=SignatureAlgorithm.ED25519,
    )
    # Ed25519 is deterministic: the same base gives the same signature bytes.
    if legacy:
        assert headers["Signature"] == "sig1=" + general.signature.split("=", 1)[1].strip(":")
    else:
        assert (headers["Signature-Input"], headers["Signature"]) == (general.signature_input, general.signature)
