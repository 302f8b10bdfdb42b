"""The rules of a private_key_jwt assertion (RFC 7523 §3, RFC 8725) and of the key sets clients register."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

import pytest
from chargenet_partner import PrivateKeyJwt
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from joserfc.jwk import OctKey, RSAKey

from chargenet.auth.client_assertions import (
    MAX_ASSERTION_LIFETIME,
    assertion_subject,
    public_key_set,
    verify_assertion,
)
from chargenet.auth.errors import InvalidClientAssertion

NOW = 1_790_000_000
TOKEN_URL = "https://cn.example/auth/oauth2/token"
ISSUER = "https://cn.example/auth"
AUDIENCES = frozenset({ISSUER, TOKEN_URL})
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def signer(key: Any = RSA_KEY, *, at: float = NOW, lifetime: int = 60, kid: str | None = None) -> PrivateKeyJwt:
    return PrivateKeyJwt(key, clock=lambda: at, lifetime=lifetime, kid=kid)


def verify(assertion: str, keys: PrivateKeyJwt, *, client_id: str = "app_1", now: int = NOW) -> Any:
    return verify_assertion(
        assertion, client_id=client_id, key_set=public_key_set(keys.jwks()), audiences=AUDIENCES, now=now
    )


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(header: dict[str, Any], claims: dict[str, Any], mac_key: bytes = b"") -> str:
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    signature = hmac.new(mac_key, signing_input.encode(), hashlib.sha256).digest() if mac_key else b""
    return f"{signing_input}.{b64(signature)}"


CLAIMS = {"iss": "app_1", "sub": "app_1", "aud": TOKEN_URL, "iat": NOW, "exp": NOW + 60, "jti": "j-1"}


@pytest.mark.parametrize(
    "key",
    [RSA_KEY, ec.generate_private_key(ec.SECP256R1()), ed25519.Ed25519PrivateKey.generate()],
    ids=["RS256", "ES256", "EdDSA"],
)
def test_an_assertion_signed_by_a_registered_key_is_accepted(key: Any) -> None:
    keys = signer(key)
    verified = verify(keys.assertion("app_1", TOKEN_URL), keys)
    assert (verified.client_id, verified.expires_at) == ("app_1", NOW + 60)


def test_the_issuer_is_an_audience_too() -> None:
    keys = signer()
    assert verify(keys.assertion("app_1", ISSUER), keys).client_id == "app_1"


def test_another_audience_is_refused() -> None:
    keys = signer()
    with pytest.raises(InvalidClientAssertion, match="aud"):
        verify(keys.assertion("app_1", "https://cn.example/api/v1"), keys)


def test_an_expired_assertion_is_refused() -> None:
    keys = signer(at=NOW - 200)
    with pytest.raises(InvalidClientAssertion, match="expired"):
        verify(keys.assertion("app_1", TOKEN_URL), keys)


def test_an_assertion_valid_for_longer_than_the_maximum_is_refused() -> None:
    keys = signer(lifetime=MAX_ASSERTION_LIFETIME + 120)
    with pytest.raises(InvalidClientAssertion, match="ahead"):
        verify(keys.assertion("app_1", TOKEN_URL), keys)


def test_an_assertion_issued_in_the_future_is_refused() -> None:
    keys = signer(at=NOW + 120)
    with pytest.raises(InvalidClientAssertion, match="future"):
        verify(keys.assertion("app_1", TOKEN_URL), keys)


def test_an_assertion_of_another_client_is_refused() -> None:
    keys = signer()
    with pytest.raises(InvalidClientAssertion, match="iss and sub"):
        verify(keys.assertion("app_2", TOKEN_URL), keys)


def test_a_key_not_registered_does_not_verify() -> None:
    stranger = signer(rsa.generate_private_key(public_exponent=65537, key_size=2048), kid=signer().kid)
    with pytest.raises(InvalidClientAssertion, match="no registered key"):
        verify(stranger.assertion("app_1", TOKEN_URL), signer())


@pytest.mark.parametrize("alg", ["none", "None", "HS256", "HS512", "RS1", None])
def test_algorithms_that_are_not_asymmetric_are_refused(alg: str | None) -> None:
    keys = signer()
    header = {"alg": alg, "kid": keys.kid}
    with pytest.raises(InvalidClientAssertion, match="not allowed"):
        verify(unsigned(header, CLAIMS, keys.public_jwk()["n"].encode()), keys)


@pytest.mark.parametrize("name", ["jwk", "jku", "x5u", "x5c", "crit"])
def test_headers_that_bring_their_own_key_are_refused(name: str) -> None:
    keys = signer()
    with pytest.raises(InvalidClientAssertion, match="refused"):
        verify(unsigned({"alg": "RS256", name: "x"}, CLAIMS), keys)


def test_an_assertion_without_a_jti_is_refused() -> None:
    keys = signer()
    claims = {k: v for k, v in CLAIMS.items() if k != "jti"}
    header = b64(json.dumps({"alg": "RS256", "kid": keys.kid}).encode())
    body = b64(json.dumps(claims).encode())
    signature = RSA_KEY.sign(f"{header}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
    with pytest.raises(InvalidClientAssertion, match="jti"):
        verify(f"{header}.{body}.{b64(signature)}", keys)


def test_the_subject_is_read_before_verification_to_find_the_keys() -> None:
    assert assertion_subject(signer().assertion("app_1", TOKEN_URL)) == "app_1"
    assert assertion_subject("not.a-jwt") is None
    assert assertion_subject(unsigned({"alg": "RS256"}, {"sub": 7})) is None


def test_a_key_set_with_a_private_key_is_refused() -> None:
    private = RSAKey.generate_key(2048, private=True).as_dict(private=True)
    with pytest.raises(InvalidClientAssertion, match="private key"):
        public_key_set({"keys": [private]})


def test_a_symmetric_key_is_refused() -> None:
    with pytest.raises(InvalidClientAssertion, match="RSA, EC or OKP"):
        public_key_set({"keys": [OctKey.generate_key(256).as_dict()]})


def test_a_short_rsa_key_is_refused() -> None:
    short = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    with pytest.raises(InvalidClientAssertion, match="2048"):
        public_key_set(signer(short).jwks())


@pytest.mark.parametrize("document", ["[]", "{}", '{"keys": []}', "not json", '{"keys": [1]}'])
def test_a_document_that_is_not_a_key_set_is_refused(document: str) -> None:
    with pytest.raises(InvalidClientAssertion):
        public_key_set(document)


@pytest.mark.parametrize(
    "key",
    [
        {"kty": "EC"},
        {"kty": "EC", "crv": "P-999", "x": "AA", "y": "AA"},
        {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"},
        {"kty": "OKP", "crv": "X25519", "x": "AA"},
        {"kty": "OKP", "crv": "Ed25519", "x": "@@@"},
        {"kty": "RSA", "n": 7, "e": "AQAB"},
        {"kty": "RSA", "n": "_" * 400, "e": "AQAB", "use": 5},
    ],
    ids=["no-members", "unknown-curve", "point-off-curve", "x25519", "bad-base64", "n-not-a-string", "bad-use"],
)
def test_a_malformed_key_is_refused_with_a_reason(key: dict[str, Any]) -> None:
    with pytest.raises(InvalidClientAssertion):
        public_key_set({"keys": [key]})
