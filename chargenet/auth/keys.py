"""Signing keys in the keys folder: the token key ring and the webhook `sign` pair, and the JWKS built from them.

Files (private keys 0600, written atomically by `KeyStore.write_private`):
  token-keys.json              the token key ring (chargenet.auth.keyring), readable state, no secrets
  token-<kid>.pem              one RSA private key per token kid (RS256)
  webhook-keys.json            when a `sign-next` pair waits to be promoted
  webhook-sign.ed25519.pem     the webhook keys of kid `sign`: Ed25519 (EdDSA) and RSA (PS512)
  webhook-sign.rsa.pem
  webhook-sign-next.*.pem      the pair published as `sign-next` during a rotation

Every process re-reads the state files when they change (the rotation command runs in another process),
and parses each PEM once: parsing a private key costs tens of milliseconds.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from joserfc.jwk import OKPKey, RSAKey

from chargenet.auth.keyring import (
    WEBHOOK_KID,
    WEBHOOK_NEXT_KID,
    TokenKeyEntry,
    TokenKeyRing,
    WebhookKeyState,
)
from chargenet.errors import ChargenetError
from chargenet.keys import KeyStore

TOKEN_RING_FILE = "token-keys.json"  # noqa: S105 - a file name
WEBHOOK_STATE_FILE = "webhook-keys.json"
RSA_BITS = 2048


class KeysMissing(ChargenetError):
    """A signing key the state files name is not in the keys folder."""


@dataclass(frozen=True, slots=True)
class WebhookKeyPair:
    kid: str
    ed25519: Ed25519PrivateKey
    rsa: RSAPrivateKey


def _new_token_kid(now: datetime) -> str:
    return f"tok-{now:%Y%m%d}-{secrets.token_hex(3)}"


def _ring_to_json(ring: TokenKeyRing) -> bytes:
    entries = [
        {
            "kid": e.kid,
            "signsFrom": e.signs_from.isoformat(),
            "retireAt": e.retire_at.isoformat() if e.retire_at else None,
        }
        for e in ring.entries
    ]
    return json.dumps({"entries": entries}, indent=2).encode()


def _ring_from_json(data: bytes) -> TokenKeyRing:
    raw = json.loads(data)
    return TokenKeyRing(
        tuple(
            TokenKeyEntry(
                e["kid"],
                datetime.fromisoformat(e["signsFrom"]),
                datetime.fromisoformat(e["retireAt"]) if e["retireAt"] else None,
            )
            for e in raw["entries"]
        )
    )


def _webhook_state_from_json(data: bytes) -> WebhookKeyState:
    raw = json.loads(data)
    published = raw.get("nextPublishedAt")
    return WebhookKeyState(datetime.fromisoformat(published) if published else None)


def _webhook_state_to_json(state: WebhookKeyState) -> bytes:
    published = state.next_published_at.isoformat() if state.next_published_at else None
    return json.dumps({"nextPublishedAt": published}, indent=2).encode()


class SigningKeys:
    """The signing keys of one process, reloaded when the files change."""

    def __init__(self, keys: KeyStore) -> None:
        self._keys = keys
        self._parsed: dict[tuple[str, float], Any] = {}
        self._stamp: tuple[float, float] | None = None
        self._ring = TokenKeyRing()
        self._webhook_state = WebhookKeyState()

    @property
    def directory(self) -> Path:
        return self._keys.directory

    # -- creation and rotation (admin commands and first start) --

    def ensure(self, now: datetime) -> None:
        """Create the first token key and the webhook pair when the folder has none."""
        if not (self.directory / TOKEN_RING_FILE).exists():
            kid = _new_token_kid(now)
            self._write_rsa(f"token-{kid}.pem")
            self._keys.write_private(TOKEN_RING_FILE, _ring_to_json(TokenKeyRing.first(kid, now)))
        if not (self.directory / f"webhook-{WEBHOOK_KID}.ed25519.pem").exists():
            self._write_webhook_pair(WEBHOOK_KID)
            self._keys.write_private(WEBHOOK_STATE_FILE, _webhook_state_to_json(WebhookKeyState()))

    def rotate_token_key(self, now: datetime) -> TokenKeyRing:
        """Publish a new token key now; it signs after the publish delay. Retired key files are deleted."""
        self.ensure(now)
        ring = _ring_from_json(self._keys.read(TOKEN_RING_FILE))
        kid = _new_token_kid(now)
        self._write_rsa(f"token-{kid}.pem")
        rotated = ring.rotate(kid, now)
        pruned = rotated.pruned(now)
        self._keys.write_private(TOKEN_RING_FILE, _ring_to_json(pruned))
        for entry in rotated.entries:
            if entry not in pruned.entries:
                (self.directory / f"token-{entry.kid}.pem").unlink(missing_ok=True)
        return pruned

    def rotate_webhook_key(self, now: datetime) -> str:
        """One step of the webhook key rotation: publish `sign-next`, or (after 24 h) promote it to `sign`."""
        self.ensure(now)
        state = _webhook_state_from_json(self._keys.read(WEBHOOK_STATE_FILE))
        next_state, step = state.rotate(now)
        if step == "published-next":
            self._write_webhook_pair(WEBHOOK_NEXT_KID)
        else:
            for kind in ("ed25519", "rsa"):
                data = self._keys.read(f"webhook-{WEBHOOK_NEXT_KID}.{kind}.pem")
                self._keys.write_private(f"webhook-{WEBHOOK_KID}.{kind}.pem", data)
        self._keys.write_private(WEBHOOK_STATE_FILE, _webhook_state_to_json(next_state))
        if step == "promoted-next":
            for kind in ("ed25519", "rsa"):
                (self.directory / f"webhook-{WEBHOOK_NEXT_KID}.{kind}.pem").unlink(missing_ok=True)
        return step

    def _write_rsa(self, name: str) -> None:
        self._keys.write_private(name, RSAKey.generate_key(RSA_BITS, private=True).as_pem(private=True))

    def _write_webhook_pair(self, kid: str) -> None:
        self._keys.write_private(
            f"webhook-{kid}.ed25519.pem", OKPKey.generate_key("Ed25519", private=True).as_pem(private=True)
        )
        self._write_rsa(f"webhook-{kid}.rsa.pem")

    # -- reading (every process) --

    def refresh(self) -> None:
        """Re-read the state files if either changed since the last call."""
        try:
            stamp = (
                (self.directory / TOKEN_RING_FILE).stat().st_mtime,
                (self.directory / WEBHOOK_STATE_FILE).stat().st_mtime,
            )
        except FileNotFoundError:
            raise KeysMissing(f"the signing keys are missing from {str(self.directory)!r}") from None
        if stamp != self._stamp:
            self._ring = _ring_from_json(self._keys.read(TOKEN_RING_FILE))
            self._webhook_state = _webhook_state_from_json(self._keys.read(WEBHOOK_STATE_FILE))
            self._stamp = stamp

    def _load(self, name: str, kind: type[RSAKey] | type[OKPKey]) -> Any:
        path = self.directory / name
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            raise KeysMissing(f"signing key {name!r} is missing from {str(self.directory)!r}") from None
        cached = self._parsed.get((name, mtime))
        if cached is None:
            cached = kind.import_key(path.read_bytes())
            self._parsed = {k: v for k, v in self._parsed.items() if k[0] != name}
            self._parsed[(name, mtime)] = cached
        return cached

    @property
    def ring(self) -> TokenKeyRing:
        return self._ring

    def token_signing_key(self, now: datetime) -> tuple[str, RSAKey]:
        kid = self._ring.signing_kid(now)
        key: RSAKey = self._load(f"token-{kid}.pem", RSAKey)
        return kid, key

    def token_verification_keys(self, now: datetime) -> dict[str, RSAKey]:
        keys: dict[str, RSAKey] = {}
        for kid in self._ring.published_kids(now):
            private: RSAKey = self._load(f"token-{kid}.pem", RSAKey)
            keys[kid] = private
        return keys

    def webhook_keys(self, kid: str = WEBHOOK_KID) -> WebhookKeyPair:
        """The private pair that signs webhooks under `kid` (`sign`, or `sign-next` while it is published)."""
        ed: OKPKey = self._load(f"webhook-{kid}.ed25519.pem", OKPKey)
        rsa: RSAKey = self._load(f"webhook-{kid}.rsa.pem", RSAKey)
        ed_private, rsa_private = ed.private_key, rsa.private_key
        assert isinstance(ed_private, Ed25519PrivateKey) and isinstance(rsa_private, RSAPrivateKey)
        return WebhookKeyPair(kid, ed_private, rsa_private)

    def jwks(self, now: datetime) -> dict[str, Any]:
        """The public halves only: token keys under their kids, webhook keys under `sign` (and `sign-next`)."""
        keys: list[dict[str, Any]] = []
        for kid, key in self.token_verification_keys(now).items():
            keys.append({**key.as_dict(private=False), "kid": kid, "use": "sig", "alg": "RS256"})
        for kid in self._webhook_state.published_kids():
            ed: OKPKey = self._load(f"webhook-{kid}.ed25519.pem", OKPKey)
            rsa: RSAKey = self._load(f"webhook-{kid}.rsa.pem", RSAKey)
            keys.append({**ed.as_dict(private=False), "kid": kid, "use": "sig", "alg": "EdDSA"})
            keys.append({**rsa.as_dict(private=False), "kid": kid, "use": "sig", "alg": "PS512"})
        return {"keys": keys}
