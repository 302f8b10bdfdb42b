"""The keys folder: secrets that must never live in the database.

Every process sharing a database must share these files; the store records a fingerprint of them and a
process with other keys refuses to start rather than silently failing every password check.
"""

from chargenet.keys.store import CredentialCipher, KeyStore, SecretHasher

__all__ = ["CredentialCipher", "KeyStore", "SecretHasher"]
