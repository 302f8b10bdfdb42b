"""Which signing keys sign and which are published, over time (sans-IO).

Token signing keys (kids of their own, RS256):
Rule 1: a new key is published PUBLISH_AHEAD seconds before it signs, so that every verifier that caches
        the key set (for at most the JWKS max-age) knows it before the first token it signed arrives.
Rule 2: the key that signs is the newest whose `signs_from` has passed.
Rule 3: a key replaced by a rotation stays published until every token it may still sign has expired:
        the new key's `signs_from` plus the token lifetime plus the validation leeway.
Rule 4: rotating again before a previous rotation completed retires every key still without an end.

Webhook signing keys (kid `sign`, decisions.md §4): a rotation first publishes the new pair under `sign-next`
for at least WEBHOOK_NEXT_MIN_AGE, then the second rotation step makes it `sign` and drops the old pair.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from chargenet.auth.tokens import ACCESS_TOKEN_LIFETIME, LEEWAY

JWKS_MAX_AGE = 300
PUBLISH_AHEAD = timedelta(seconds=2 * JWKS_MAX_AGE)
RETIRE_AFTER = timedelta(seconds=ACCESS_TOKEN_LIFETIME + LEEWAY)
WEBHOOK_KID = "sign"
WEBHOOK_NEXT_KID = "sign-next"
WEBHOOK_NEXT_MIN_AGE = timedelta(hours=24)


@dataclass(frozen=True, slots=True)
class TokenKeyEntry:
    kid: str
    signs_from: datetime
    retire_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TokenKeyRing:
    entries: tuple[TokenKeyEntry, ...] = ()

    @classmethod
    def first(cls, kid: str, now: datetime) -> TokenKeyRing:
        """A ring whose only key signs at once: nothing was ever signed before, so nothing needs warning."""
        return cls((TokenKeyEntry(kid, now),))

    def signing_kid(self, now: datetime) -> str:
        candidates = [e for e in self.entries if e.signs_from <= now and (e.retire_at is None or e.retire_at > now)]
        if not candidates:
            raise LookupError("no token signing key is active")
        return max(candidates, key=lambda e: e.signs_from).kid

    def published_kids(self, now: datetime) -> tuple[str, ...]:
        return tuple(e.kid for e in self.entries if e.retire_at is None or e.retire_at > now)

    def rotate(self, new_kid: str, now: datetime) -> TokenKeyRing:
        if any(e.kid == new_kid for e in self.entries):
            raise ValueError(f"kid {new_kid!r} is already in the key ring")
        signs_from = now + PUBLISH_AHEAD
        retired = tuple(
            e if e.retire_at is not None else replace(e, retire_at=signs_from + RETIRE_AFTER) for e in self.entries
        )
        return TokenKeyRing((*retired, TokenKeyEntry(new_kid, signs_from)))

    def pruned(self, now: datetime) -> TokenKeyRing:
        """Without the keys that no longer need publishing; their files may then be deleted."""
        return TokenKeyRing(tuple(e for e in self.entries if e.retire_at is None or e.retire_at > now))


class WebhookRotationTooEarly(Exception):
    def __init__(self, ready_at: datetime) -> None:
        super().__init__(f"sign-next has not been published for 24 hours yet; promote it after {ready_at.isoformat()}")
        self.ready_at = ready_at


@dataclass(frozen=True, slots=True)
class WebhookKeyState:
    """`next_published_at` is set while a `sign-next` pair is published and waiting to become `sign`."""

    next_published_at: datetime | None = None

    def published_kids(self) -> tuple[str, ...]:
        return (WEBHOOK_KID, WEBHOOK_NEXT_KID) if self.next_published_at else (WEBHOOK_KID,)

    def rotate(self, now: datetime) -> tuple[WebhookKeyState, str]:
        """The next state and the step taken: `published-next` or `promoted-next`.

        Raises `WebhookRotationTooEarly` when `sign-next` is younger than 24 hours.
        """
        if self.next_published_at is None:
            return WebhookKeyState(now), "published-next"
        ready_at = self.next_published_at + WEBHOOK_NEXT_MIN_AGE
        if now < ready_at:
            raise WebhookRotationTooEarly(ready_at)
        return WebhookKeyState(None), "promoted-next"
