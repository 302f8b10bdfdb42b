from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chargenet.domain.events import AuthorizationStatus, StopReason
from chargenet.edge.core import authorize as auth
from chargenet.edge.core import starts
from chargenet.edge.core import transactions as tx

A = AuthorizationStatus
T0 = datetime(2026, 1, 1, tzinfo=UTC)
KEY = tx.StartKey("CS-1", 1, "TAG1", T0, 1000)
NO_FACTS = starts.StartFacts(None, None, None, (), ())


def open_record(transaction_id: int, key: tx.StartKey) -> tx.TransactionRecord:
    return tx.TransactionRecord(transaction_id, key)


def plan(
    facts: starts.StartFacts = NO_FACTS,
    *,
    plugin_count: int = 0,
    has_upstream: bool = False,
    opinions: list[AuthorizationStatus | None] | None = None,
) -> starts.RepeatedStart | starts.NewStart | starts.AskPlugins:
    return starts.plan_start(
        KEY, facts, now=T0, plugin_count=plugin_count, has_upstream=has_upstream, opinions=opinions
    )


def test_a_known_start_is_a_repeat_with_what_it_was_told() -> None:
    repeat = starts.RepeatedStart(7, A.BLOCKED)
    assert plan(starts.StartFacts(repeat, None, None, (), ())) == repeat


def test_a_tag_nobody_knows_without_an_upstream_starts_invalid() -> None:
    assert plan() == starts.NewStart(auth.AuthDecision(A.INVALID, auth.AuthSource.DEFAULT), [])


def test_a_tag_in_the_local_list_is_decided_there() -> None:
    facts = starts.StartFacts(None, auth.LocalAuthEntry("TAG1", A.ACCEPTED), None, (), ())
    result = plan(facts)
    assert isinstance(result, starts.NewStart) and result.decision.source is auth.AuthSource.LOCAL_LIST


def test_with_plugins_the_plan_asks_them_before_deciding() -> None:
    assert isinstance(plan(plugin_count=1), starts.AskPlugins)


def test_the_plugins_opinion_decides_the_start() -> None:
    result = plan(plugin_count=1, opinions=[None, A.ACCEPTED])
    assert isinstance(result, starts.NewStart)
    assert result.decision == auth.AuthDecision(A.ACCEPTED, auth.AuthSource.PLUGIN)


def test_with_the_upstream_away_a_cached_answer_decides() -> None:
    cached = auth.CachedAuthorization("TAG1", A.ACCEPTED, T0 + timedelta(hours=1))
    result = plan(starts.StartFacts(None, None, cached, (), ()), has_upstream=True)
    assert isinstance(result, starts.NewStart) and result.decision.source is auth.AuthSource.CACHE


def test_an_older_open_transaction_on_the_connector_is_closed_by_the_start() -> None:
    older = open_record(5, tx.StartKey("CS-1", 1, "OTHER", T0 - timedelta(hours=1), 400))
    result = plan(starts.StartFacts(None, None, None, (), (older,)))
    assert isinstance(result, starts.NewStart)
    assert result.closes == [tx.Superseded(5, T0, 1000, StopReason.OTHER)]


def test_the_tags_transaction_this_start_closes_does_not_make_it_concurrent() -> None:
    older = open_record(5, tx.StartKey("CS-1", 1, "TAG1", T0 - timedelta(hours=1), 400))
    facts = starts.StartFacts(None, auth.LocalAuthEntry("TAG1", A.ACCEPTED), None, (older,), (older,))
    result = plan(facts)
    assert isinstance(result, starts.NewStart) and result.decision.status is A.ACCEPTED


def test_the_tags_transaction_elsewhere_makes_it_concurrent() -> None:
    elsewhere = open_record(5, tx.StartKey("CS-2", 1, "TAG1", T0 - timedelta(hours=1), 400))
    facts = starts.StartFacts(None, auth.LocalAuthEntry("TAG1", A.ACCEPTED), None, (elsewhere,), ())
    result = plan(facts)
    assert isinstance(result, starts.NewStart) and result.decision.status is A.CONCURRENT_TX
    assert result.closes == []


def test_a_newer_open_transaction_on_the_connector_stays_open_and_counts() -> None:
    newer = open_record(5, tx.StartKey("CS-1", 1, "TAG1", T0 + timedelta(minutes=5), 1200))
    facts = starts.StartFacts(None, auth.LocalAuthEntry("TAG1", A.ACCEPTED), None, (newer,), (newer,))
    result = plan(facts)
    assert isinstance(result, starts.NewStart)
    assert result.closes == [] and result.decision.status is A.CONCURRENT_TX
