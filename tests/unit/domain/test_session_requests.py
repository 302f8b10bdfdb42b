"""Which session request a start follows (`domain.session_requests`, Rules 1-4), and how a request reads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chargenet.domain.session_requests import (
    MATCH_WINDOW,
    OpenRequest,
    RequestStatus,
    matching_request,
    shown_status,
)

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def request(
    name: str,
    *,
    ago: timedelta = timedelta(seconds=30),
    id_tag: str = "TAG1",
    status: RequestStatus = RequestStatus.ACCEPTED,
    remote_start_id: int | None = None,
) -> OpenRequest:
    return OpenRequest(name, id_tag, NOW - ago, status, remote_start_id)


def test_a_start_follows_the_accepted_request_for_its_id_tag() -> None:
    assert matching_request([request("a"), request("b", id_tag="TAG2")], id_tag="TAG1", now=NOW) == "a"


def test_among_several_candidates_the_newest_request_wins() -> None:
    older, newer = request("old", ago=timedelta(minutes=5)), request("new", ago=timedelta(minutes=1))
    assert matching_request([newer, older], id_tag="TAG1", now=NOW) == "new"


def test_a_request_older_than_the_window_is_not_followed() -> None:
    stale = request("stale", ago=MATCH_WINDOW + timedelta(seconds=1))
    assert matching_request([stale], id_tag="TAG1", now=NOW) is None


@pytest.mark.parametrize(
    ("status", "followed"),
    [
        (RequestStatus.PENDING, True),
        (RequestStatus.ACCEPTED, True),
        (RequestStatus.TIMEOUT, True),
        (RequestStatus.REJECTED, False),
        (RequestStatus.NOT_CONNECTED, False),
        (RequestStatus.FAILED, False),
    ],
)
def test_only_a_request_the_station_may_have_acted_on_is_followed(status: RequestStatus, followed: bool) -> None:
    found = matching_request([request("a", status=status)], id_tag="TAG1", now=NOW)
    assert (found == "a") is followed


def test_a_start_that_names_its_request_follows_that_one_alone() -> None:
    named = request("named", remote_start_id=7, id_tag="OTHER", ago=MATCH_WINDOW * 2)
    candidates = [request("by-tag"), named]
    assert matching_request(candidates, id_tag="TAG1", now=NOW, remote_start_id=7) == "named"
    assert matching_request(candidates, id_tag="TAG1", now=NOW, remote_start_id=8) is None


def test_a_request_left_pending_past_any_answer_reads_as_a_timeout() -> None:
    assert shown_status(RequestStatus.PENDING, NOW - timedelta(minutes=3), NOW) is RequestStatus.TIMEOUT
    assert shown_status(RequestStatus.PENDING, NOW - timedelta(seconds=10), NOW) is RequestStatus.PENDING
    assert shown_status(RequestStatus.REJECTED, NOW - timedelta(days=1), NOW) is RequestStatus.REJECTED
