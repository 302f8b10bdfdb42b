from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from chargenet.domain.events import AuthorizationStatus
from chargenet.edge.core import authorize as auth
from chargenet.edge.core.authorize import AuthDecision, AuthSource, NextSource, UpstreamState
from chargenet.edge.ocpp16 import parse, render

A = AuthorizationStatus
T0 = datetime(2026, 1, 1, tzinfo=UTC)
CTX = auth.AuthorizeContext(
    id_tag="TAG1",
    now=T0,
    local_entry=None,
    plugin_count=0,
    upstream=UpstreamState.NONE,
    cached=None,
    has_active_transaction=False,
)


def test_local_list_accepted_tag_is_accepted_locally() -> None:
    ctx = replace(CTX, local_entry=auth.LocalAuthEntry("TAG1", A.ACCEPTED), upstream=UpstreamState.CONNECTED)
    assert auth.begin(ctx) == AuthDecision(A.ACCEPTED, AuthSource.LOCAL_LIST)


def test_local_list_blocked_tag_is_blocked_without_asking_anyone() -> None:
    ctx = replace(CTX, local_entry=auth.LocalAuthEntry("TAG1", A.BLOCKED), plugin_count=2)
    assert auth.begin(ctx) == AuthDecision(A.BLOCKED, AuthSource.LOCAL_LIST)


def test_local_list_accepted_tag_past_its_expiry_is_expired() -> None:
    entry = auth.LocalAuthEntry("TAG1", A.ACCEPTED, expires_at=T0)
    decision = auth.begin(replace(CTX, local_entry=entry))
    assert isinstance(decision, AuthDecision) and decision.status is A.EXPIRED


def test_local_list_accepted_tag_before_its_expiry_carries_the_expiry() -> None:
    entry = auth.LocalAuthEntry("TAG1", A.ACCEPTED, expires_at=T0 + timedelta(days=1), parent_id_tag="FLEET")
    decision = auth.begin(replace(CTX, local_entry=entry))
    assert isinstance(decision, AuthDecision)
    assert render.id_tag_info(decision) == {
        "status": "Accepted",
        "expiryDate": "2026-01-02T00:00:00Z",
        "parentIdTag": "FLEET",
    }


def test_tag_not_in_the_list_asks_the_plugins_first() -> None:
    assert auth.begin(replace(CTX, plugin_count=1, upstream=UpstreamState.CONNECTED)) is NextSource.PLUGINS


def test_first_plugin_with_an_opinion_decides() -> None:
    decision = auth.after_plugins(CTX, [None, A.BLOCKED, A.ACCEPTED])
    assert decision == AuthDecision(A.BLOCKED, AuthSource.PLUGIN)


def test_plugins_without_opinion_pass_to_the_upstream() -> None:
    assert auth.after_plugins(replace(CTX, upstream=UpstreamState.CONNECTED), [None]) is NextSource.UPSTREAM


def test_without_plugins_and_upstream_the_tag_is_invalid() -> None:
    assert auth.begin(CTX) == AuthDecision(A.INVALID, AuthSource.DEFAULT)


def test_upstream_answer_decides() -> None:
    ctx = replace(CTX, upstream=UpstreamState.CONNECTED)
    decision = auth.after_upstream(
        ctx, parse.upstream_verdict({"status": "Accepted", "expiryDate": "2026-02-01T00:00:00+00:00"})
    )
    assert decision == AuthDecision(A.ACCEPTED, AuthSource.UPSTREAM, datetime(2026, 2, 1, tzinfo=UTC))


def test_upstream_away_uses_a_valid_cached_answer() -> None:
    cached = auth.CachedAuthorization("TAG1", A.ACCEPTED, T0 + timedelta(hours=1))
    decision = auth.begin(replace(CTX, upstream=UpstreamState.AWAY, cached=cached))
    assert isinstance(decision, AuthDecision) and (decision.status, decision.source) == (A.ACCEPTED, AuthSource.CACHE)


def test_upstream_away_ignores_an_outdated_cached_answer() -> None:
    cached = auth.CachedAuthorization("TAG1", A.ACCEPTED, T0)
    assert auth.begin(replace(CTX, upstream=UpstreamState.AWAY, cached=cached)) == AuthDecision(
        A.INVALID, AuthSource.DEFAULT
    )


def test_upstream_without_answer_falls_back_to_the_cache() -> None:
    cached = auth.CachedAuthorization("TAG1", A.BLOCKED, T0 + timedelta(hours=1))
    decision = auth.after_upstream(replace(CTX, upstream=UpstreamState.CONNECTED, cached=cached), None)
    assert (decision.status, decision.source) == (A.BLOCKED, AuthSource.CACHE)


def test_accepted_tag_with_an_active_transaction_is_concurrent_tx() -> None:
    ctx = replace(CTX, local_entry=auth.LocalAuthEntry("TAG1", A.ACCEPTED), has_active_transaction=True)
    decision = auth.begin(ctx)
    assert isinstance(decision, AuthDecision) and decision.status is A.CONCURRENT_TX


def test_blocked_tag_with_an_active_transaction_stays_blocked() -> None:
    ctx = replace(CTX, local_entry=auth.LocalAuthEntry("TAG1", A.BLOCKED), has_active_transaction=True)
    decision = auth.begin(ctx)
    assert isinstance(decision, AuthDecision) and decision.status is A.BLOCKED


def test_upstream_answer_without_expiry_is_trusted_for_a_day_without_an_expiry() -> None:
    entry = auth.cache_entry("TAG1", parse.upstream_verdict({"status": "Accepted"}), T0)
    assert entry is not None and (entry.valid_until, entry.expires_at) == (T0 + timedelta(days=1), None)


def test_upstream_answer_with_expiry_is_cached_until_then() -> None:
    entry = auth.cache_entry(
        "TAG1", parse.upstream_verdict({"status": "Accepted", "expiryDate": "2026-01-01T02:00:00Z"}), T0
    )
    assert entry is not None and entry.valid_until == entry.expires_at == T0 + timedelta(hours=2)


def test_upstream_answer_is_cached_as_it_came_with_its_parent() -> None:
    entry = auth.cache_entry("TAG1", parse.upstream_verdict({"status": "Blocked", "parentIdTag": "FLEET"}), T0)
    assert entry is not None and (entry.status, entry.parent_id_tag) == (A.BLOCKED, "FLEET")


def test_upstream_concurrent_tx_is_not_cached() -> None:
    assert auth.cache_entry("TAG1", parse.upstream_verdict({"status": "ConcurrentTx"}), T0) is None


def test_cached_answer_without_expiry_decides_without_an_expiry_date() -> None:
    cached = auth.CachedAuthorization("TAG1", A.ACCEPTED, T0 + timedelta(days=1))
    decision = auth.begin(replace(CTX, upstream=UpstreamState.AWAY, cached=cached))
    assert isinstance(decision, AuthDecision) and render.id_tag_info(decision) == {"status": "Accepted"}


def test_cached_answer_with_the_upstreams_expiry_passes_it_on() -> None:
    expiry = T0 + timedelta(hours=2)
    cached = auth.CachedAuthorization("TAG1", A.ACCEPTED, expiry, expires_at=expiry)
    decision = auth.begin(replace(CTX, upstream=UpstreamState.AWAY, cached=cached))
    assert isinstance(decision, AuthDecision) and render.id_tag_info(decision)["expiryDate"] == "2026-01-01T02:00:00Z"
