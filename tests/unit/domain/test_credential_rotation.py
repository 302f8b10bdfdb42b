from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chargenet.domain.credential_rotation import MAX_OVERLAP, check_overlap_end, retry_with_previous
from chargenet.errors import InvalidInput

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
UNTIL = NOW + timedelta(days=1)


@pytest.mark.parametrize("status", [401, 403])
def test_a_refusal_under_the_new_credentials_is_retried_with_the_previous_ones_during_the_overlap(status: int) -> None:
    assert retry_with_previous(status, now=NOW, overlap_until=UNTIL, has_previous=True)


@pytest.mark.parametrize("status", [200, 204, 400, 404, 500, 503])
def test_any_other_answer_is_not_retried_with_the_previous_credentials(status: int) -> None:
    assert not retry_with_previous(status, now=NOW, overlap_until=UNTIL, has_previous=True)


def test_once_the_overlap_has_ended_the_previous_credentials_are_never_used() -> None:
    assert not retry_with_previous(401, now=UNTIL, overlap_until=UNTIL, has_previous=True)
    assert not retry_with_previous(401, now=UNTIL + timedelta(seconds=1), overlap_until=UNTIL, has_previous=True)


def test_without_previous_credentials_nothing_is_retried() -> None:
    assert not retry_with_previous(401, now=NOW, overlap_until=UNTIL, has_previous=False)
    assert not retry_with_previous(401, now=NOW, overlap_until=None, has_previous=True)


def test_an_overlap_ends_in_the_future_and_within_thirty_days() -> None:
    assert check_overlap_end(NOW + MAX_OVERLAP, now=NOW) == NOW + MAX_OVERLAP
    for until in (NOW, NOW - timedelta(seconds=1), NOW + MAX_OVERLAP + timedelta(seconds=1)):
        with pytest.raises(InvalidInput) as refused:
            check_overlap_end(until, now=NOW)
        assert refused.value.field == "overlapUntil"
