"""From a stored webhook row to what the sender needs, decrypting its credentials (and, during a rotation's overlap,
the previous ones)."""

from __future__ import annotations

import json

from chargenet.domain.webhook_headers import loaded_headers
from chargenet.keys import CredentialCipher
from chargenet.store.models import Webhook
from chargenet.webhooks.outbound_auth import NoAuth, OutboundAuth, from_document
from chargenet.webhooks.sender import Endpoint
from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat


def decrypted_auth(credentials: bytes | None, cipher: CredentialCipher) -> OutboundAuth:
    if credentials is None:
        return NoAuth()
    return from_document(json.loads(cipher.decrypt(credentials)))


def auth_of(row: Webhook, cipher: CredentialCipher) -> OutboundAuth:
    return decrypted_auth(row.credentials, cipher)


def endpoint_of(row: Webhook, cipher: CredentialCipher) -> Endpoint:
    previous = None
    if row.previous_credentials is not None and row.previous_credentials_until is not None:
        previous = decrypted_auth(row.previous_credentials, cipher)
    return Endpoint(
        webhook_id=row.id,
        url=row.url,
        auth=auth_of(row, cipher),
        algorithm=SignatureAlgorithm(row.signature_algorithm),
        signature_format=SignatureFormat(row.signature_format),
        headers=loaded_headers(row.custom_headers),
        previous_auth=previous,
        previous_until=row.previous_credentials_until if previous is not None else None,
    )
