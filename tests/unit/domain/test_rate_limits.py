"""Rate limits per application (domain/rate_limits.py): the token bucket, a process's share of a shared one, and
the headers that tell a caller where it stands."""

from __future__ import annotations

from chargenet.domain.rate_limits import (
    DEFAULT_QUOTA,
    Bucket,
    Decision,
    Quota,
    admit,
    claimed,
    full,
    limit_header,
    policy_header,
    quota_of,
    slice_of,
    spend,
    take,
    unclaimed,
)

QUOTA = Quota(60)  # one token a second


def admit_all(bucket: Bucket, quota: Quota, times: list[float]) -> tuple[Bucket, list[Decision]]:
    decisions = []
    for now in times:
        bucket, decision = admit(bucket, quota, now)
        decisions.append(decision)
    return bucket, decisions


def test_the_quota_is_admitted_at_once_and_the_next_request_is_refused() -> None:
    _, decisions = admit_all(full(QUOTA, 0.0), QUOTA, [0.0] * 61)
    assert all(d.allowed for d in decisions[:60])
    assert [d.remaining for d in decisions[:3]] == [59, 58, 57]
    refused = decisions[60]
    assert (refused.allowed, refused.remaining, refused.retry_after, refused.reset) == (False, 0, 1, 60)


def test_a_spent_bucket_refills_at_the_quota_per_window() -> None:
    bucket, _ = admit_all(full(QUOTA, 0.0), QUOTA, [0.0] * 60)
    bucket, decision = admit(bucket, QUOTA, 0.5)
    assert not decision.allowed and decision.retry_after == 1
    bucket, decision = admit(bucket, QUOTA, 1.0)
    assert decision.allowed and decision.remaining == 0
    _, decision = admit(bucket, QUOTA, 31.0)
    assert decision.remaining == 29 and decision.reset == 31


def test_retry_after_is_when_the_next_token_is_there_for_a_slow_quota() -> None:
    hourly = Quota(10, window=3600)  # one token every 360 s
    bucket, _ = admit_all(full(hourly, 0.0), hourly, [0.0] * 10)
    _, refused = admit(bucket, hourly, 60.0)
    assert (refused.allowed, refused.retry_after) == (False, 300)


def test_a_bucket_never_holds_more_than_the_quota() -> None:
    bucket, _ = admit(full(QUOTA, 0.0), QUOTA, 0.0)
    _, decision = admit(bucket, QUOTA, 10_000.0)
    assert decision.remaining == 59 and decision.reset == 1


def test_a_time_before_the_buckets_own_adds_nothing() -> None:
    bucket = Bucket(0.0, 100.0)
    assert take(bucket, QUOTA, 90.0, 5) == (Bucket(0.0, 100.0), 0)


def test_a_lowered_quota_caps_what_the_bucket_holds() -> None:
    _, decision = admit(full(Quota(600), 0.0), QUOTA, 0.0)
    assert decision.remaining == 59


def test_an_application_without_a_limit_of_its_own_has_the_default_quota() -> None:
    assert quota_of(None) == DEFAULT_QUOTA == Quota(600, 60)
    assert quota_of(1200) == Quota(1200, 60)


def test_a_slice_is_a_twentieth_of_the_quota_between_one_and_fifty_tokens() -> None:
    assert [slice_of(Quota(n)) for n in (1, 19, 20, 600, 100_000)] == [1, 1, 1, 30, 50]


def test_taking_a_slice_takes_whole_tokens_up_to_what_is_there() -> None:
    assert take(Bucket(7.5, 0.0), QUOTA, 0.0, 30) == (Bucket(0.5, 0.0), 7)
    assert take(Bucket(40.0, 0.0), QUOTA, 0.0, 30) == (Bucket(10.0, 0.0), 30)


def test_a_share_asks_for_a_slice_first_then_spends_it_without_asking() -> None:
    share = unclaimed(QUOTA, 0.0)
    assert spend(share, QUOTA, 0.0) is None
    shared, granted = take(full(QUOTA, 0.0), QUOTA, 0.0, 3)
    share = claimed(share, shared, granted)
    allowed = []
    for _ in range(3):
        spent = spend(share, QUOTA, 0.0)
        assert spent is not None
        share, decision = spent
        allowed.append((decision.allowed, decision.remaining))
    # What the process holds and what it last saw left in the shared bucket.
    assert allowed == [(True, 59), (True, 58), (True, 57)]
    assert spend(share, QUOTA, 0.0) is None


def test_a_share_refuses_without_asking_while_the_shared_bucket_cannot_hold_a_token() -> None:
    share = claimed(unclaimed(QUOTA, 0.0), Bucket(0.25, 0.0), 0)
    spent = spend(share, QUOTA, 0.5)
    assert spent is not None
    assert (spent[1].allowed, spent[1].retry_after) == (False, 1)
    assert spend(share, QUOTA, 0.75) is None  # a token has come back: worth asking again


def test_the_headers_name_the_policy_and_where_the_caller_stands() -> None:
    _, decision = admit(full(Quota(100), 0.0), Quota(100), 0.0)
    assert policy_header(Quota(100)) == b'"app";q=100;w=60'
    assert limit_header(decision) == b'"app";r=99;t=1'
