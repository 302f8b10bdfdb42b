"""Rate limits per application (decisions.md §5 "Partner API"): a token bucket, and the headers that tell it.

Rule 1: an application may make `quota.requests` requests in a burst; its bucket then refills at
        `quota.requests / quota.window` tokens a second, up to the quota again. A request takes one token; with
        less than one in the bucket it is refused, and `Retry-After` says when the next token is there.
Rule 2: every answer tells the policy and where the caller stands (draft-ietf-httpapi-ratelimit-headers):
        `RateLimit-Policy: "app";q=QUOTA;w=WINDOW` and `RateLimit: "app";r=REMAINING;t=SECONDS`, where `r` is
        the whole tokens left and `t` the seconds until the bucket is full again.
Rule 3: processes sharing a budget take it in slices (`slice_of`): a process spends its slice without asking
        anyone, and asks the shared bucket again once the slice is spent. A slice is about a twentieth of the
        quota, at most `MAX_SLICE`, so that a busy application asks the store once every few dozen requests.

Times are seconds on any monotonic scale the caller keeps (a clock's timestamps); nothing here reads a clock.
The values a request makes are named tuples, the cheapest immutable values Python builds: this runs on every API
request.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

DEFAULT_REQUESTS = 600  # the quota of an application without a limit of its own: 600 a minute, 10 a second
WINDOW = 60  # seconds; every quota is a number of requests a minute
MAX_REQUESTS = 1_000_000  # the highest limit an application can be given (about 16,700 a second)
MAX_SLICE = 50


@dataclass(frozen=True, slots=True)
class Quota:
    requests: int
    window: int = WINDOW
    rate: float = field(init=False, compare=False)  # tokens a second

    def __post_init__(self) -> None:
        object.__setattr__(self, "rate", self.requests / self.window)


DEFAULT_QUOTA = Quota(DEFAULT_REQUESTS)


@lru_cache(maxsize=1024)
def quota_of(requests: int | None) -> Quota:
    """The quota of an application whose own limit is `requests` a minute (None: the default); one object per
    limit, so the hot path builds none."""
    return DEFAULT_QUOTA if requests is None else Quota(requests)


class Bucket(NamedTuple):
    """Tokens in a bucket as of `at`."""

    tokens: float
    at: float


def full(quota: Quota, now: float) -> Bucket:
    return Bucket(float(quota.requests), now)


def refilled(bucket: Bucket, quota: Quota, now: float) -> Bucket:
    """The bucket as of `now`; a time before its own (another process's clock behind ours) adds nothing."""
    if now <= bucket.at:
        return Bucket(min(bucket.tokens, float(quota.requests)), bucket.at)
    return Bucket(min(float(quota.requests), bucket.tokens + (now - bucket.at) * quota.rate), now)


def take(bucket: Bucket, quota: Quota, now: float, wanted: int) -> tuple[Bucket, int]:
    """Take up to `wanted` whole tokens: the bucket after, and how many were taken (0 when less than one is left)."""
    current = refilled(bucket, quota, now)
    taken = min(wanted, math.floor(current.tokens))
    return Bucket(current.tokens - taken, current.at), max(0, taken)


def slice_of(quota: Quota) -> int:
    """How many tokens a process sharing the budget takes from the shared bucket at once (Rule 3)."""
    return max(1, min(MAX_SLICE, quota.requests // 20))


class Decision(NamedTuple):
    """One request's answer from the limiter: whether it may go on, and the figures its headers tell."""

    quota: Quota
    allowed: bool
    remaining: int
    reset: int  # seconds until the bucket is full again
    retry_after: int  # seconds until a token is there (0 when one is)


def decided(quota: Quota, tokens: float, *, allowed: bool) -> Decision:
    """The decision once a request has taken its token (`allowed`) or was refused, `tokens` being left."""
    tokens = max(0.0, tokens)
    missing = quota.requests - tokens
    reset = math.ceil(missing / quota.rate) if missing > 0 else 0
    retry_after = 0 if allowed else max(1, math.ceil((1 - tokens) / quota.rate))
    return Decision(quota, allowed, math.floor(tokens), reset, retry_after)


def admit(bucket: Bucket, quota: Quota, now: float) -> tuple[Bucket, Decision]:
    """One request against a bucket of this process (Rule 1). `take` for one token, written out: it runs on
    every API request."""
    if now > bucket.at:
        tokens = min(float(quota.requests), bucket.tokens + (now - bucket.at) * quota.rate)
    else:
        tokens, now = min(bucket.tokens, float(quota.requests)), bucket.at
    allowed = tokens >= 1
    if allowed:
        tokens -= 1
    return Bucket(tokens, now), decided(quota, tokens, allowed=allowed)


@lru_cache(maxsize=1024)
def policy_header(quota: Quota) -> bytes:
    return b'"app";q=%d;w=%d' % (quota.requests, quota.window)


def limit_header(decision: Decision) -> bytes:
    return b'"app";r=%d;t=%d' % (decision.remaining, decision.reset)


class Share(NamedTuple):
    """What a process holds of a budget shared with other processes (Rule 3): tokens taken from the shared bucket
    and not spent yet, and the shared bucket as it was left by this process's last claim.

    Other processes only ever take from the shared bucket, so it holds at most what `shared` refills to: when that
    is less than a token, the request is refused here, without asking."""

    held: int
    shared: Bucket


def unclaimed(quota: Quota, now: float) -> Share:
    """A process's share before its first claim: nothing held, the shared bucket presumed full."""
    return Share(0, full(quota, now))


def spend(share: Share, quota: Quota, now: float) -> tuple[Share, Decision] | None:
    """One request against a process's share; None when the process must claim a slice first."""
    seen = refilled(share.shared, quota, now)
    if share.held >= 1:
        left = Share(share.held - 1, seen)
        return left, decided(quota, min(float(quota.requests), left.held + seen.tokens), allowed=True)
    if seen.tokens < 1:
        return Share(0, seen), decided(quota, seen.tokens, allowed=False)
    return None


def claimed(share: Share, shared_after: Bucket, granted: int) -> Share:
    """The share once a claim took `granted` tokens and left the shared bucket as `shared_after`."""
    return Share(share.held + granted, shared_after)
