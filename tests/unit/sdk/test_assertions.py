"""The SDK's private_key_jwt assertions, verified by joserfc (an implementation other than the SDK's), and the
token clients' choice of client authentication."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chargenet_partner import PrivateKeyJwt, TokenClient
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from joserfc import jws
from joserfc.jwk import KeySet

TOKEN_URL = "https://cn.example/auth/oauth2/token"


@pytest.mark.parametrize(
    ("key", "alg"),
    [
        (rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256"),
        (ec.generate_private_key(ec.SECP256R1()), "ES256"),
        (ed25519.Ed25519PrivateKey.generate(), "EdDSA"),
    ],
)
@pytest.mark.filterwarnings("ignore:EdDSA is deprecated")
def test_an_assertion_verifies_with_the_published_key_set(key: Any, alg: str) -> None:
    signer = PrivateKeyJwt(key, clock=lambda: 1_790_000_000)
    assertion = signer.assertion("app_1", TOKEN_URL)
    verified = jws.deserialize_compact(assertion, KeySet.import_key_set(signer.jwks()), algorithms=[alg])  # type: ignore[arg-type]
    assert verified.headers() == {"alg": alg, "typ": "JWT", "kid": signer.kid}
    claims = json.loads(verified.payload)
    assert claims["iss"] == claims["sub"] == "app_1" and claims["aud"] == TOKEN_URL
    assert (claims["iat"], claims["exp"]) == (1_790_000_000, 1_790_000_060)


def test_every_assertion_has_a_fresh_jti() -> None:
    signer = PrivateKeyJwt(ec.generate_private_key(ec.SECP256R1()))
    first, second = (json.loads(jws.extract_compact(signer.assertion("a", TOKEN_URL).encode()).payload) for _ in "ab")
    assert first["jti"] != second["jti"]


def test_the_key_set_holds_the_public_half_only() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    (jwk,) = PrivateKeyJwt(key).jwks()["keys"]
    assert "d" not in jwk and jwk["kty"] == "EC" and jwk["use"] == "sig"


def test_a_pem_key_is_read_and_gets_its_thumbprint_as_kid() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    assert (
        PrivateKeyJwt(pem).kid
        == PrivateKeyJwt(key).kid
        == KeySet.import_key_set(PrivateKeyJwt(key).jwks()).keys[0].thumbprint()
    )  # type: ignore[arg-type]


def test_a_client_needs_a_secret_or_a_private_key() -> None:
    with pytest.raises(ValueError, match="client_secret"):
        TokenClient(TOKEN_URL, "app_1")
    with pytest.raises(ValueError, match="PrivateKeyJwt"):
        TokenClient(TOKEN_URL, "app_1", "secret", auth_method="private_key_jwt")


def test_introspection_and_revocation_urls_sit_beside_the_token_url() -> None:
    signer = PrivateKeyJwt(ec.generate_private_key(ec.SECP256R1()))
    with TokenClient(TOKEN_URL, "app_1", private_key_jwt=signer) as client:
        url, form, _ = client._operation("revoke", "tok")
        assert url == "https://cn.example/auth/oauth2/revoke" and form["token"] == "tok"
        assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        assert client._operation("introspect", "tok")[0] == "https://cn.example/auth/oauth2/introspect"
    with pytest.raises(ValueError, match="introspect URL"), TokenClient("https://x/issue", "a", "s") as other:
        other._operation("introspect", "tok")
