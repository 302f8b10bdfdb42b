"""Webhook signing keys for tests, generated once per session (RSA generation is slow)."""

from __future__ import annotations

from functools import cache

from chargenet_partner.webhooks import PublicKey
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from chargenet.webhooks.sender import WebhookSigningKeys


@cache
def signing_keys() -> WebhookSigningKeys:
    return WebhookSigningKeys(
        ed25519=ed25519.Ed25519PrivateKey.generate(),
        rsa=rsa.generate_private_key(public_exponent=65537, key_size=2048),
    )


def public_keys(kid: str, kty: str) -> PublicKey | None:
    keys = signing_keys()
    found: dict[tuple[str, str], PublicKey] = {
        ("sign", "OKP"): keys.ed25519.public_key(),
        ("sign", "RSA"): keys.rsa.public_key(),
    }
    return found.get((kid, kty))
