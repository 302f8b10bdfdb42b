"""The scopes a group can grant over a company or a site and everything below it (decisions.md §3).

A scope is checked when a request arrives, against the groups the calling application is in at that
moment; the `scope` claim of an access token only reports what was granted when it was issued.
"""

from __future__ import annotations

from enum import StrEnum

from chargenet.errors import InvalidInput


class Scope(StrEnum):
    SITES_READ = "sites:read"
    CHARGE_POINTS_READ = "charge-points:read"
    CHARGE_POINTS_WRITE = "charge-points:write"
    SESSIONS_WRITE = "sessions:write"
    TRANSACTIONS_READ = "transactions:read"
    EVENTS_READ = "events:read"
    WEBHOOKS_READ = "webhooks:read"
    WEBHOOKS_WRITE = "webhooks:write"
    APPLICATIONS_WRITE = "applications:write"
    GROUPS_WRITE = "groups:write"
    METERS_READ = "meters:read"
    METERS_WRITE = "meters:write"
    SITES_WRITE = "sites:write"
    OCPP_MESSAGES_READ = "ocpp-messages:read"
    AUDIT_LOG_READ = "audit-log:read"


def parse_scope(value: str) -> Scope:
    """The scope named `value`; `InvalidInput` (field `scope`) lists the known ones otherwise."""
    try:
        return Scope(value)
    except ValueError:
        known = ", ".join(s.value for s in Scope)
        raise InvalidInput(f"{value!r} is not a scope (known: {known})", field="scope") from None


def format_scopes(scopes: frozenset[Scope] | set[Scope]) -> str:
    """The RFC 6749 §3.3 space-separated form, in a stable order."""
    return " ".join(sorted(s.value for s in scopes))
