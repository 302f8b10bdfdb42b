from __future__ import annotations

import base64
import itertools

import pytest

from chargenet.auth.secrets import (
    CLIENT_ID_ALPHABET,
    is_unreserved,
    new_client_id,
    new_client_secret,
)


def test_client_id_uses_unreserved_characters_only() -> None:
    client_id = new_client_id()
    assert client_id.startswith("app_") and is_unreserved(client_id)
    assert all(c in CLIENT_ID_ALPHABET for c in client_id[4:]) and len(client_id) == 24


def test_client_id_skips_bytes_that_would_bias_the_alphabet() -> None:
    stream = itertools.cycle([255, 252, 0, 35])
    client_id = new_client_id(lambda n: bytes(next(stream) for _ in range(n)))
    assert client_id[4:] == "0z" * 10


def test_client_secret_carries_256_bits() -> None:
    secret = new_client_secret()
    assert len(base64.urlsafe_b64decode(secret + "=")) == 32 and is_unreserved(secret)


def test_client_secret_refuses_short_randomness() -> None:
    with pytest.raises(ValueError):
        new_client_secret(lambda n: b"x" * (n - 1))


def test_client_secrets_differ() -> None:
    assert len({new_client_secret() for _ in range(100)}) == 100


@pytest.mark.parametrize("value", ["", "a b", "a:b", "a%20", "é"])
def test_reserved_characters_are_detected(value: str) -> None:
    assert not is_unreserved(value)
