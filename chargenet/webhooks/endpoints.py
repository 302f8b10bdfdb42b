"""From a stored webhook row to what the sender needs, decrypting its credentials."""

from __future__ import annotations

import json

from chargenet.keys import CredentialCipher
from chargenet.store.models import Webhook
from chargenet.webhooks.outbound_auth import NoAuth, OutboundAuth, from_document
from chargenet.webhooks.sender import Endpoint
from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat


def auth_of(row: Webhook, cipher: CredentialCipher) -> OutboundAuth:
    if row.credentials is None:
        return NoAuth()
    return from_document(json.loads(cipher.decrypt(row.credentials)))


def endpoint_of(row: Webhook, cipher: CredentialCipher) -> Endpoint:
    return Endpoint(
        webhook_id=row.id,
        url=row.url,
        auth=auth_of(row, cipher),
        algorithm=SignatureAlgorithm(row.signature_algorithm),
        signature_format=SignatureFormat(row.signature_format),
    )
