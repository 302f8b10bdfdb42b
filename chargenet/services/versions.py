"""Optimistic concurrency: every change carries the version of the object its author saw (the console's forms, the
API's PATCH bodies), and one made from another version is refused rather than overwriting another's edit."""

from __future__ import annotations

from chargenet.errors import StaleChange


def check_version(kind: str, name: str, current: int, expected: int | None) -> None:
    """Refuse a change made from a version other than `current` (another change came first); `None`: the author
    did not say which version it saw, and the change applies as asked."""
    if expected is not None and current != expected:
        raise StaleChange(f"{kind} {name} was changed by someone else meanwhile; reload it and try again")
