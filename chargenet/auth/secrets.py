"""Client identifiers and secrets (sans-IO).

Ids and secrets use only RFC 3986 unreserved characters, so they survive the form-urlencoding of
HTTP Basic credentials (RFC 6749 §2.3.1) unchanged. A secret carries 256 random bits and is stored only
as a keyed SHA-256 (HMAC) hash (`chargenet.keys.SecretHasher`): a machine secret of that entropy needs no
slow hash, and a fast one keeps the token endpoint fast (argon2 defaults verify about 10 secrets a second
on our hardware).
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable

CLIENT_ID_PREFIX = "app_"
CLIENT_ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
CLIENT_ID_LENGTH = 20  # about 103 bits: ids are not secret, but they must not collide or be guessed in bulk
SECRET_BYTES = 32
UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

RandomBytes = Callable[[int], bytes]


def new_client_id(random_bytes: RandomBytes = secrets.token_bytes) -> str:
    """`app_` and 20 characters of [0-9a-z], drawn without modulo bias."""
    chars: list[str] = []
    while len(chars) < CLIENT_ID_LENGTH:
        for byte in random_bytes(CLIENT_ID_LENGTH):
            # 252 = 7 * 36: values above it would favour the first characters.
            if byte < 252 and len(chars) < CLIENT_ID_LENGTH:
                chars.append(CLIENT_ID_ALPHABET[byte % 36])
    return CLIENT_ID_PREFIX + "".join(chars)


def new_client_secret(random_bytes: RandomBytes = secrets.token_bytes) -> str:
    """256 random bits as unpadded base64url: 43 unreserved characters."""
    raw = random_bytes(SECRET_BYTES)
    if len(raw) != SECRET_BYTES:
        raise ValueError(f"need {SECRET_BYTES} random bytes, got {len(raw)}")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def is_unreserved(value: str) -> bool:
    return bool(value) and all(c in UNRESERVED for c in value)
