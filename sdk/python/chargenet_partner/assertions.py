"""private_key_jwt client assertions (RFC 7523 §2.2): authenticate with a private key instead of a shared secret.

The application keeps the private key; chargenet keeps only the public half, registered as a JWKS document or
the URL of one (`jwks()` gives the document). Each assertion is a short-lived JWT with a fresh `jti`, signed
with RS256 (RSA), ES256 (P-256) or EdDSA (Ed25519), chosen by the key.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Callable
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
DEFAULT_LIFETIME = 60  # chargenet accepts at most 300 s

SigningKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _int(value: int, length: int | None = None) -> str:
    return _b64(value.to_bytes(length or (value.bit_length() + 7) // 8, "big"))


def _public_jwk(key: SigningKey) -> dict[str, str]:
    if isinstance(key, rsa.RSAPrivateKey):
        numbers = key.public_key().public_numbers()
        return {"kty": "RSA", "n": _int(numbers.n), "e": _int(numbers.e)}
    if isinstance(key, ec.EllipticCurvePrivateKey):
        if not isinstance(key.curve, ec.SECP256R1):
            raise ValueError("only P-256 EC keys are supported (ES256)")
        point = key.public_key().public_numbers()
        return {"kty": "EC", "crv": "P-256", "x": _int(point.x, 32), "y": _int(point.y, 32)}
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return {"kty": "OKP", "crv": "Ed25519", "x": _b64(raw)}


def _thumbprint(jwk: dict[str, str]) -> str:
    # RFC 7638: the required members, sorted, without whitespace.
    required = {"RSA": ("e", "kty", "n"), "EC": ("crv", "kty", "x", "y"), "OKP": ("crv", "kty", "x")}[jwk["kty"]]
    canonical = json.dumps({name: jwk[name] for name in required}, separators=(",", ":"), sort_keys=True)
    return _b64(hashlib.sha256(canonical.encode()).digest())


class PrivateKeyJwt:
    """Signs client assertions with one private key.

    `key` is a `cryptography` private key or its PEM (PKCS#8 or traditional, unencrypted unless `password`);
    `kid` defaults to the key's RFC 7638 thumbprint, which `jwks()` publishes with it.
    """

    def __init__(
        self,
        key: SigningKey | str | bytes,
        *,
        kid: str | None = None,
        password: bytes | None = None,
        lifetime: int = DEFAULT_LIFETIME,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(key, str | bytes):
            loaded = serialization.load_pem_private_key(key.encode() if isinstance(key, str) else key, password)
            if not isinstance(loaded, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey):
                raise ValueError("the key must be an RSA, P-256 EC or Ed25519 private key")
            key = loaded
        self._key: SigningKey = key
        self._public = _public_jwk(key)
        self.kid = kid or _thumbprint(self._public)
        self.alg = {"RSA": "RS256", "EC": "ES256", "OKP": "EdDSA"}[self._public["kty"]]
        self._lifetime = lifetime
        self._clock = clock

    def public_jwk(self) -> dict[str, str]:
        return {**self._public, "kid": self.kid, "alg": self.alg, "use": "sig"}

    def jwks(self) -> dict[str, Any]:
        """The JWKS document to register with chargenet (or to serve at the registered URL)."""
        return {"keys": [self.public_jwk()]}

    def assertion(self, client_id: str, audience: str) -> str:
        """A new signed assertion of `client_id` for `audience` (chargenet's token endpoint URL, or its issuer)."""
        now = int(self._clock())
        header = {"alg": self.alg, "typ": "JWT", "kid": self.kid}
        claims = {
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + self._lifetime,
            "jti": secrets.token_urlsafe(18),
        }
        signing_input = (
            _b64(json.dumps(header, separators=(",", ":")).encode())
            + "."
            + _b64(json.dumps(claims, separators=(",", ":")).encode())
        )
        return signing_input + "." + _b64(self._sign(signing_input.encode("ascii")))

    def _sign(self, data: bytes) -> bytes:
        key = self._key
        if isinstance(key, rsa.RSAPrivateKey):
            return key.sign(data, padding.PKCS1v15(), hashes.SHA256())
        if isinstance(key, ec.EllipticCurvePrivateKey):
            r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
            return r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return key.sign(data)

    def form(self, client_id: str, audience: str) -> dict[str, str]:
        """The form parameters that authenticate `client_id` (RFC 7521 §4.2)."""
        return {"client_assertion_type": JWT_BEARER, "client_assertion": self.assertion(client_id, audience)}
