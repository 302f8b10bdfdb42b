from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from chargenet.errors import ChargenetError, ConfigurationError

SECRET_HASH_KEY = "secret-hash.key"  # noqa: S105 - a file name, not a secret
CREDENTIAL_KEY = "credentials.key"


class KeyStore:
    """Files under the keys folder, created on first use with mode 0600 in a 0700 folder."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def ensure(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise ConfigurationError(
                "CHARGENET_KEYS_DIR", f"cannot create {str(self.directory)!r}: {exc.strerror}"
            ) from None
        self._load_or_create(SECRET_HASH_KEY, lambda: secrets.token_bytes(32))
        self._load_or_create(CREDENTIAL_KEY, _new_credential_key)

    def secret_hasher(self) -> SecretHasher:
        return SecretHasher(self._load_or_create(SECRET_HASH_KEY, lambda: secrets.token_bytes(32)))

    def credential_cipher(self) -> CredentialCipher:
        return CredentialCipher(self._load_or_create(CREDENTIAL_KEY, _new_credential_key))

    def fingerprint(self) -> str:
        """Identifies the hashing and encryption keys without revealing them."""
        digest = hashlib.sha256()
        for name in (SECRET_HASH_KEY, CREDENTIAL_KEY):
            digest.update(hashlib.sha256(self.read(name)).digest())
        return digest.hexdigest()[:32]

    def read(self, name: str) -> bytes:
        return (self.directory / name).read_bytes()

    def write_private(self, name: str, data: bytes) -> None:
        """Write atomically with 0600 from the start, so a private key is never readable by others."""
        path = self.directory / name
        temporary = path.with_suffix(path.suffix + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)

    def _load_or_create(self, name: str, make: object) -> bytes:
        path = self.directory / name
        if not path.exists():
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            assert callable(make)
            self.write_private(name, make())
        return path.read_bytes()


def _new_credential_key() -> bytes:
    # cryptography is imported where a credential key is made or used: most commands do neither.
    from cryptography.fernet import Fernet

    return Fernet.generate_key()


class SecretHasher:
    """Keyed SHA-256 (HMAC) for machine secrets: 256-bit random secrets need no slow hash, and a leaked
    database is useless without the key in the keys folder. Humans' passwords use argon2id elsewhere."""

    PREFIX = "hs256$"

    def __init__(self, key: bytes) -> None:
        # Keyed once and copied for each secret: a new HMAC looks its digest up in OpenSSL and hashes the key
        # again, most of the hash's time on the token endpoint, where every grant hashes a secret.
        self._keyed = hmac.new(key, digestmod=hashlib.sha256)

    def hash(self, secret: str | bytes) -> str:
        mac = self._keyed.copy()
        mac.update(secret.encode() if isinstance(secret, str) else secret)
        return self.PREFIX + mac.hexdigest()

    def verify(self, secret: str | bytes, stored: str) -> bool:
        return hmac.compare_digest(self.hash(secret), stored)


class CredentialDecryptError(ChargenetError):
    pass


class CredentialCipher:
    """Authenticated encryption for credentials we must send on (webhook auth, upstream passwords)."""

    def __init__(self, key: bytes) -> None:
        from cryptography.fernet import Fernet

        self._fernet = Fernet(key)

    def encrypt(self, plaintext: str) -> bytes:
        return self._fernet.encrypt(plaintext.encode())

    def decrypt(self, token: bytes) -> str:
        from cryptography.fernet import InvalidToken

        try:
            return self._fernet.decrypt(token).decode()
        except InvalidToken:
            raise CredentialDecryptError("a stored credential cannot be decrypted with this keys folder") from None
