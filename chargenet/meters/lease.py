"""Who polls a bus: the rules of the bus lease, as a pure function of (lease row, owner, now).

Several chargenet processes may share one database; each TCP endpoint or RTU bus must be polled by exactly one
of them. The process named in a bus's lease polls it until the lease expires; the holder renews every second and
a lease lasts 10 s, so a bus whose process died is taken over within about 11 s (the architecture asks for 15).

A lease still in our name was never held by anyone else (a release clears the owner), so what this process
remembers about that bus's meters is still true and it simply renews. A lease taken (free, or expired under
another owner) means another process may have written in between: the taker forgets its memory of those meters
and restores them from the store, which reconciles an open session exactly as a restart does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

LEASE_DURATION = timedelta(seconds=10)
RENEW_INTERVAL_S = 1.0


@dataclass(frozen=True, slots=True)
class BusLease:
    """A lease row as stored: `owner` None means free."""

    bus_key: str
    owner: str | None
    expires_at: datetime | None


class LeaseDecision(StrEnum):
    RENEW = "renew"
    """Ours and never held by another since: extend it, keep polling as before."""
    TAKE = "take"
    """Free or expired: take it, and restore the bus's meters from the store before polling."""
    LEAVE = "leave"
    """Another process holds it: do not poll this bus."""


def decide(lease: BusLease | None, owner: str, now: datetime) -> LeaseDecision:
    """What `owner` does about a bus at `now`, given its lease row (None: no row yet, so free)."""
    if lease is None or lease.owner is None:
        return LeaseDecision.TAKE
    if lease.owner == owner:
        # Even past its expiry: nobody took it in between, or the owner would have changed.
        return LeaseDecision.RENEW
    if lease.expires_at is None or lease.expires_at <= now:
        return LeaseDecision.TAKE
    return LeaseDecision.LEAVE


def expires_at(now: datetime) -> datetime:
    """The expiry a lease taken or renewed at `now` gets."""
    return now + LEASE_DURATION
