"""Rotating a webhook's outbound credentials with an overlap (`domain.credential_rotation`, decisions.md §5).

The new credentials are used at once; the ones they replace are kept, encrypted as the current ones are, until the
overlap ends: meanwhile a request the partner refuses with 401 or 403 is sent once more with them, so a partner
can switch at any moment of the overlap without losing an event. Then a background job deletes them
(`webhooks.install`). A second rotation during an overlap keeps only the credentials it replaces. Like creating a
webhook, a rotation to OAuth2 resolves the token URL outside any unit of work first, then writes in a short one;
audited (never a credential), it bumps the webhook's version.
"""

from __future__ import annotations

from datetime import datetime

from chargenet.domain.credential_rotation import check_overlap_end
from chargenet.domain.scopes import Scope
from chargenet.errors import Conflict, InvalidInput
from chargenet.keys import CredentialCipher
from chargenet.services.callers import Caller, refuse_viewer
from chargenet.services.reach import reachable_webhook
from chargenet.services.versions import check_version
from chargenet.services.webhooks import (
    WebhookView,
    audit_change,
    encrypt_auth,
    stored_auth,
    view_of,
)
from chargenet.store.db import Transactions
from chargenet.webhooks.changes import webhook_changed
from chargenet.webhooks.outbound_auth import NoAuth, OutboundAuth
from chargenet.webhooks.targets import check_targets, targets_of
from chargenet.webhooks.transport import Resolver, resolve


async def rotate_credentials(
    transaction: Transactions,
    caller: Caller,
    cipher: CredentialCipher,
    webhook_id: str,
    auth: OutboundAuth,
    *,
    overlap_until: datetime,
    now: datetime,
    allow_private: bool,
    expected_version: int | None = None,
    resolver: Resolver = resolve,
) -> WebhookView:
    """Use `auth` from now on and keep the current credentials until `overlap_until`. Raises InvalidInput for an
    overlap that has ended or lasts too long (`overlapUntil`), new credentials of no type (`auth`), or a token URL
    refused (`tokenUrl`); Conflict when the webhook has no credentials to rotate, or these very ones."""
    refuse_viewer(caller, "rotating a webhook's credentials")
    check_overlap_end(overlap_until, now=now)
    if isinstance(auth, NoAuth):
        raise InvalidInput("rotate to new credentials; a webhook without any is changed, not rotated", field="auth")
    await check_targets(targets_of(None, auth), allow_private=allow_private, resolver=resolver)
    async with transaction() as session:
        row = await reachable_webhook(
            session, caller, Scope.WEBHOOKS_WRITE, webhook_id, change="rotating a webhook's credentials"
        )
        check_version("webhook", row.id, row.version, expected_version)
        if row.credentials is None:
            raise Conflict(f"webhook {row.id} has no credentials to rotate: set them with a change")
        if stored_auth(cipher, row) == auth:
            raise Conflict(f"webhook {row.id} already uses these credentials")
        row.previous_credentials, row.previous_credentials_until = row.credentials, overlap_until
        row.credentials, row.auth_type = encrypt_auth(cipher, auth), auth.type.value
        row.version += 1
        row.updated_at = now
        await session.flush()
        detail = {"auth": auth.type.value, "overlapUntil": overlap_until.isoformat()}
        await audit_change(session, caller, row, "webhook.rotate_credentials", now, detail)
        webhook_changed(session)
        return await view_of(session, row)
