"""The addresses a webhook change makes chargenet reach, checked when the change is made (decisions.md §4): its URL
and an OAuth2 token URL; the sender checks them again at every connect."""

from __future__ import annotations

from urllib.parse import urlsplit

from chargenet.errors import InvalidInput
from chargenet.webhooks.outbound_auth import OAuth2ClientCredentials, OutboundAuth
from chargenet.webhooks.transport import HostUnresolvable, OutboundAddressRefused, Resolver, checked_addresses


async def _check_target(url: str, *, allow_private: bool, resolver: Resolver, field: str) -> None:
    """Refuse a URL whose host resolves now to an address that is not allowed, with InvalidInput naming
    `field` (unresolvable names pass: the sender checks again at every connect)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        await checked_addresses(host, port, allow_private=allow_private, resolver=resolver)
    except OutboundAddressRefused as exc:
        raise InvalidInput(f"target refused: {exc.reason}", field=field) from None
    except HostUnresolvable:
        return


def targets_of(url: str | None, auth: OutboundAuth | None) -> tuple[tuple[str, str], ...]:
    """The addresses a change makes the webhook reach, each with the field that names it: its URL, and an OAuth2
    token URL, since a token request is an outbound request like the delivery itself: a private token URL would
    let a webhook reach into the operator's network just the same (decisions.md §4)."""
    targets = []
    if url is not None:
        targets.append(("url", url))
    if isinstance(auth, OAuth2ClientCredentials):
        targets.append(("tokenUrl", auth.token_url))
    return tuple(targets)


async def check_targets(targets: tuple[tuple[str, str], ...], *, allow_private: bool, resolver: Resolver) -> None:
    """Resolve each target and refuse one that is not allowed. Called outside any unit of work: a resolver may
    take seconds to answer, and on SQLite a unit that writes holds the store's one writer lock meanwhile."""
    for field, url in targets:
        await _check_target(url, allow_private=allow_private, resolver=resolver, field=field)
