from __future__ import annotations

import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from chargenet.auth.keyring import PUBLISH_AHEAD, RETIRE_AFTER, WebhookRotationTooEarly
from chargenet.auth.keys import KeysMissing, SigningKeys
from chargenet.keys import KeyStore

T0 = datetime(2026, 7, 1, tzinfo=UTC)
PRIVATE_FIELDS = ("d", "p", "q", "dp", "dq", "qi")


@pytest.fixture
def keys(tmp_path: Path) -> SigningKeys:
    store = KeyStore(tmp_path / "keys")
    store.ensure()
    signing = SigningKeys(store)
    signing.ensure(T0)
    signing.refresh()
    return signing


def test_private_key_files_are_0600(keys: SigningKeys) -> None:
    pems = list(keys.directory.glob("*.pem"))
    assert len(pems) == 3
    assert all(stat.S_IMODE(os.stat(p).st_mode) == 0o600 for p in pems)


def test_jwks_holds_public_halves_only(keys: SigningKeys) -> None:
    document = keys.jwks(T0)
    assert len(document["keys"]) == 3
    assert not any(field in key for key in document["keys"] for field in PRIVATE_FIELDS)


def test_webhook_keys_share_kid_sign_in_both_types(keys: SigningKeys) -> None:
    sign = [(k["kty"], k["alg"]) for k in keys.jwks(T0)["keys"] if k["kid"] == "sign"]
    assert sorted(sign) == [("OKP", "EdDSA"), ("RSA", "PS512")]
    pair = keys.webhook_keys()
    assert isinstance(pair.ed25519, Ed25519PrivateKey) and isinstance(pair.rsa, RSAPrivateKey)


def test_ensure_keeps_existing_keys(keys: SigningKeys) -> None:
    before = keys.jwks(T0)
    keys.ensure(T0 + timedelta(days=1))
    keys.refresh()
    assert keys.jwks(T0) == before


def test_token_rotation_deletes_retired_key_files(keys: SigningKeys) -> None:
    first = keys.ring.entries[0].kid
    keys.rotate_token_key(T0)
    later = T0 + PUBLISH_AHEAD + RETIRE_AFTER + timedelta(seconds=1)
    keys.rotate_token_key(later)
    assert not (keys.directory / f"token-{first}.pem").exists()
    keys.refresh()
    assert first not in keys.token_verification_keys(later)


def test_webhook_promotion_replaces_sign_with_sign_next(keys: SigningKeys) -> None:
    assert keys.rotate_webhook_key(T0) == "published-next"
    keys.refresh()
    next_x = next(k["x"] for k in keys.jwks(T0)["keys"] if k["kid"] == "sign-next" and k["kty"] == "OKP")
    with pytest.raises(WebhookRotationTooEarly):
        keys.rotate_webhook_key(T0 + timedelta(hours=1))
    assert keys.rotate_webhook_key(T0 + timedelta(hours=24)) == "promoted-next"
    keys.refresh()
    published = keys.jwks(T0)["keys"]
    assert {k["kid"] for k in published if k["kty"] == "OKP"} == {"sign"}
    assert next(k["x"] for k in published if k["kty"] == "OKP") == next_x


def test_missing_state_file_is_reported(keys: SigningKeys) -> None:
    (keys.directory / "token-keys.json").unlink()
    with pytest.raises(KeysMissing):
        keys.refresh()
