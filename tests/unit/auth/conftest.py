from __future__ import annotations

import pytest
from joserfc.jwk import RSAKey


@pytest.fixture(scope="session")
def rsa_key() -> RSAKey:
    return RSAKey.generate_key(2048)


@pytest.fixture(scope="session")
def other_rsa_key() -> RSAKey:
    return RSAKey.generate_key(2048)
