"""Who decides an idTag, and what they decide: the authorization chain as pure steps.

Theory of operation. The shell builds an `AuthorizeContext` from what it read (the site's local list entry,
the cached upstream answer, whether the tag has an active transaction, whether an upstream is connected) and
walks the chain: `begin` either decides or names the next source to ask; the shell asks it (plugins with a
timeout, the upstream with a CALL) and hands the answer to `after_plugins` / `after_upstream`. Every decision
is final for this request and is what the post-authorize hook publishes (one Authorize event per decision).

Rules (decisions.md §3-§4):
- Rule 1: a tag in the site's local list is decided there, whatever its status, and never forwarded. An
  Accepted entry past its expiry is Expired.
- Rule 2: otherwise the plugins are asked in order; the first with an opinion decides.
- Rule 3: otherwise, when the site has an upstream, the upstream decides; its answer is cached as it came,
  before Rule 5, with the upstream's own expiryDate or none (`cache_entry`). How long the edge trusts an
  answer offline is the edge's business and never becomes an expiryDate.
- Rule 4: when the upstream is away (not connected, no answer, CALLERROR), a cached answer still valid
  decides; otherwise the tag is Invalid. Without an upstream, and without an opinion, the tag is Invalid.
- Rule 5: an Accepted tag that already has an active transaction is ConcurrentTx.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from chargenet.domain.events import AuthorizationStatus

CACHE_LIFETIME = timedelta(days=1)  # an upstream answer without an expiryDate is trusted offline this long


class AuthSource(StrEnum):
    LOCAL_LIST = "localList"
    PLUGIN = "plugin"
    UPSTREAM = "upstream"
    CACHE = "cache"
    DEFAULT = "default"


class UpstreamState(StrEnum):
    NONE = "none"  # the site has no upstream: the edge is the central system
    CONNECTED = "connected"
    AWAY = "away"


@dataclass(frozen=True, slots=True)
class LocalAuthEntry:
    id_tag: str
    status: AuthorizationStatus
    expires_at: datetime | None = None
    parent_id_tag: str | None = None


@dataclass(frozen=True, slots=True)
class CachedAuthorization:
    id_tag: str
    status: AuthorizationStatus
    valid_until: datetime  # trusted offline until then (Rule 4)
    parent_id_tag: str | None = None
    expires_at: datetime | None = None  # the upstream's expiryDate, if it gave one


@dataclass(frozen=True, slots=True)
class AuthDecision:
    status: AuthorizationStatus
    source: AuthSource
    expires_at: datetime | None = None
    parent_id_tag: str | None = None


@dataclass(frozen=True, slots=True)
class UpstreamVerdict:
    """What the upstream said of a tag, read from its answer by the face of the upstream's protocol."""

    status: AuthorizationStatus
    expires_at: datetime | None = None  # the upstream's expiryDate, the only expiry a station is ever given
    parent_id_tag: str | None = None


@dataclass(frozen=True, slots=True)
class AuthorizeContext:
    id_tag: str
    now: datetime
    local_entry: LocalAuthEntry | None
    plugin_count: int
    upstream: UpstreamState
    cached: CachedAuthorization | None
    has_active_transaction: bool


class NextSource(StrEnum):
    PLUGINS = "plugins"
    UPSTREAM = "upstream"


def begin(ctx: AuthorizeContext) -> AuthDecision | NextSource:
    if ctx.local_entry is not None:
        return _finish(ctx, _from_local_list(ctx.local_entry, ctx.now))
    if ctx.plugin_count:
        return NextSource.PLUGINS
    return _after_own_sources(ctx)


def after_plugins(ctx: AuthorizeContext, opinions: list[AuthorizationStatus | None]) -> AuthDecision | NextSource:
    """`opinions` are the plugins' answers in order; None is "no opinion" (also a plugin that timed out)."""
    for opinion in opinions:
        if opinion is not None:
            return _finish(ctx, AuthDecision(opinion, AuthSource.PLUGIN))
    return _after_own_sources(ctx)


def after_upstream(ctx: AuthorizeContext, verdict: UpstreamVerdict | None) -> AuthDecision:
    """`verdict` is what the upstream said of the tag, or None when it did not answer with one (Rule 4)."""
    if verdict is None:
        return _finish(ctx, _offline(ctx))
    decision = AuthDecision(verdict.status, AuthSource.UPSTREAM, verdict.expires_at, verdict.parent_id_tag)
    # The upstream's own ConcurrentTx passes through as it said it; Rule 5 adds ours on top.
    return _finish(ctx, decision)


def cache_entry(id_tag: str, verdict: UpstreamVerdict, now: datetime) -> CachedAuthorization | None:
    """What to cache from the upstream's verdict (Rule 3); None when there is nothing to cache.

    The upstream's ConcurrentTx is not cached: it speaks of the tag's transaction at that moment (OCPP 1.6 keeps
    it for StartTransaction), not of the tag, and offline the edge judges concurrency itself (Rule 5)."""
    if verdict.status is AuthorizationStatus.CONCURRENT_TX:
        return None
    valid_until = verdict.expires_at if verdict.expires_at is not None else now + CACHE_LIFETIME
    return CachedAuthorization(id_tag, verdict.status, valid_until, verdict.parent_id_tag, verdict.expires_at)


def _after_own_sources(ctx: AuthorizeContext) -> AuthDecision | NextSource:
    if ctx.upstream is UpstreamState.CONNECTED:
        return NextSource.UPSTREAM
    if ctx.upstream is UpstreamState.AWAY:
        return _finish(ctx, _offline(ctx))
    return _finish(ctx, AuthDecision(AuthorizationStatus.INVALID, AuthSource.DEFAULT))


def _from_local_list(entry: LocalAuthEntry, now: datetime) -> AuthDecision:
    status = entry.status
    if status is AuthorizationStatus.ACCEPTED and entry.expires_at is not None and entry.expires_at <= now:
        status = AuthorizationStatus.EXPIRED
    return AuthDecision(status, AuthSource.LOCAL_LIST, entry.expires_at, entry.parent_id_tag)


def _offline(ctx: AuthorizeContext) -> AuthDecision:
    cached = ctx.cached
    if cached is not None and cached.valid_until > ctx.now:
        return AuthDecision(cached.status, AuthSource.CACHE, cached.expires_at, cached.parent_id_tag)
    return AuthDecision(AuthorizationStatus.INVALID, AuthSource.DEFAULT)


def _finish(ctx: AuthorizeContext, decision: AuthDecision) -> AuthDecision:
    if decision.status is AuthorizationStatus.ACCEPTED and ctx.has_active_transaction:
        return AuthDecision(AuthorizationStatus.CONCURRENT_TX, decision.source, None, decision.parent_id_tag)
    return decision
