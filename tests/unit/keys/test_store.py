from __future__ import annotations

import hashlib
import hmac
import stat
from pathlib import Path

import pytest

from chargenet.keys import KeyStore
from chargenet.keys.store import CredentialDecryptError, SecretHasher


def test_keys_are_created_private(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "keys")
    keys.ensure()
    assert stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700
    for file in (tmp_path / "keys").iterdir():
        assert stat.S_IMODE(file.stat().st_mode) == 0o600


def test_keys_survive_a_reopen_with_the_same_fingerprint(tmp_path: Path) -> None:
    first = KeyStore(tmp_path)
    first.ensure()
    assert KeyStore(tmp_path).fingerprint() == first.fingerprint()


def test_secret_hash_verifies_the_secret_and_nothing_else(tmp_path: Path) -> None:
    hasher = KeyStore(tmp_path).secret_hasher()
    stored = hasher.hash("s3cret-station-key")
    assert stored.startswith("hs256$")
    assert hasher.verify("s3cret-station-key", stored)
    assert not hasher.verify("s3cret-station-kez", stored)


def test_secret_hash_is_hmac_sha256_under_the_key_on_every_call() -> None:
    # Hashes stored by earlier versions must keep verifying, however the hasher computes them.
    key = bytes(range(32))
    hasher = SecretHasher(key)
    expected = "hs256$" + hmac.new(key, b"s3cret", hashlib.sha256).hexdigest()
    assert [hasher.hash("s3cret"), hasher.hash(b"s3cret"), hasher.hash("s3cret")] == [expected] * 3
    assert hasher.hash("other") != expected


def test_secret_hash_depends_on_the_key(tmp_path: Path) -> None:
    one = KeyStore(tmp_path / "a").secret_hasher()
    other = KeyStore(tmp_path / "b").secret_hasher()
    assert one.hash("x") != other.hash("x")


def test_credentials_round_trip_and_fail_clearly_under_another_key(tmp_path: Path) -> None:
    token = KeyStore(tmp_path / "a").credential_cipher().encrypt("partner-password")
    assert KeyStore(tmp_path / "a").credential_cipher().decrypt(token) == "partner-password"
    with pytest.raises(CredentialDecryptError):
        KeyStore(tmp_path / "b").credential_cipher().decrypt(token)
