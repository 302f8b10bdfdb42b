"""The webhook signing pair (kid `sign`) in the keys folder, for processes where the auth part's key ring
is not wired: the same file names (`webhook-sign.ed25519.pem`, `webhook-sign.rsa.pem`, PKCS#8 PEM, 0600),
created on first use, parsed once per file change (parsing an RSA key costs tens of milliseconds)."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
)

from chargenet.keys import KeyStore
from chargenet.webhooks.sender import WebhookSigningKeys

KEY_ID = "sign"
ED25519_FILE = f"webhook-{KEY_ID}.ed25519.pem"
RSA_FILE = f"webhook-{KEY_ID}.rsa.pem"


def _pem(key: ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())


class WebhookKeyFiles:
    def __init__(self, keys: KeyStore) -> None:
        self._keys = keys
        self._cached: tuple[tuple[float, float], WebhookSigningKeys] | None = None

    def ensure(self) -> None:
        directory: Path = self._keys.directory
        if not (directory / ED25519_FILE).exists():
            self._keys.write_private(ED25519_FILE, _pem(ed25519.Ed25519PrivateKey.generate()))
        if not (directory / RSA_FILE).exists():
            self._keys.write_private(RSA_FILE, _pem(rsa.generate_private_key(public_exponent=65537, key_size=2048)))

    def __call__(self) -> WebhookSigningKeys:
        directory: Path = self._keys.directory
        stamp = ((directory / ED25519_FILE).stat().st_mtime, (directory / RSA_FILE).stat().st_mtime)
        if self._cached is None or self._cached[0] != stamp:
            ed = load_pem_private_key(self._keys.read(ED25519_FILE), password=None)
            rs = load_pem_private_key(self._keys.read(RSA_FILE), password=None)
            assert isinstance(ed, ed25519.Ed25519PrivateKey) and isinstance(rs, rsa.RSAPrivateKey)
            self._cached = (stamp, WebhookSigningKeys(ed25519=ed, rsa=rs, key_id=KEY_ID))
        return self._cached[1]
