"""The live table's core: which reads change rows, and what each subscriber is sent (domain/live.py Rules 1-5)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from chargenet.domain.live import (
    ENDED,
    RESYNC,
    ConnectorState,
    Fanout,
    LiveRow,
    LiveState,
    Mark,
    StationLink,
)

T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def connector(
    status: str | None = "Available",
    *,
    received: float = 0,
    charge_point: str = "CP-1",
    number: int = 1,
    company: str = "co_a",
    station: str | None = None,
    error_code: str = "NoError",
) -> ConnectorState:
    return ConnectorState(
        company_id=company,
        site_id="site_a",
        station_id=station or charge_point,
        charge_point_id=charge_point,
        connector_id=number,
        status=status,
        error_code=error_code,
        info=None,
        status_at=at(received),
        received_at=at(received),
    )


def row(status: str = "Available", **kwargs: Any) -> LiveRow:
    return LiveRow(connector(status, **kwargs), StationLink("CP-1", True, connected_at=T0))


def test_a_new_status_changes_its_row() -> None:
    state = LiveState()
    state.absorb([connector("Available")])
    [changed] = state.absorb([connector("Charging", received=1)])
    assert changed.connector.status == "Charging"


def test_a_row_read_again_unchanged_is_not_a_change() -> None:
    state = LiveState()
    state.absorb([connector("Available")])
    assert state.absorb([connector("Available")]) == []


def test_a_new_error_code_under_the_same_status_is_a_change() -> None:
    state = LiveState()
    state.absorb([connector("Faulted")])
    [changed] = state.absorb([connector("Faulted", received=1, error_code="GroundFailure")])
    assert changed.connector.error_code == "GroundFailure"


def test_an_older_read_never_takes_a_row_back_in_time() -> None:
    state = LiveState()
    state.absorb([connector("Charging", received=5)])
    assert state.absorb([connector("Preparing", received=3)]) == []
    current = state.row(("CP-1", 1))
    assert current is not None and current.connector.status == "Charging"


def test_a_link_change_changes_every_row_of_its_station() -> None:
    state = LiveState()
    state.absorb([connector(number=1, station="ST"), connector(number=2, station="ST"), connector(charge_point="X")])
    changed = state.absorb([], [StationLink("ST", True, connected_at=at(1))])
    assert [r.key for r in changed] == [("CP-1", 1), ("CP-1", 2)]
    assert all(r.online for r in changed)


def test_an_older_link_state_is_ignored() -> None:
    state = LiveState()
    state.absorb([connector(station="ST")], [StationLink("ST", False, connected_at=at(1), disconnected_at=at(9))])
    assert state.absorb([], [StationLink("ST", True, connected_at=at(1))]) == []


def test_a_station_without_a_link_is_shown_offline_whatever_it_reported() -> None:
    state = LiveState()
    [shown] = state.absorb([connector("Charging")])
    assert not shown.online
    assert shown.shown_status == "Offline"


def test_a_disconnected_station_is_shown_offline() -> None:
    state = LiveState()
    state.absorb([connector("Charging", station="ST")], [StationLink("ST", True, connected_at=at(0))])
    [shown] = state.absorb([], [StationLink("ST", False, connected_at=at(0), disconnected_at=at(5))])
    assert shown.shown_status == "Offline"
    assert shown.connector.status == "Charging"  # what it last reported, shown beside


def test_changes_in_one_read_are_answered_once_each_in_order() -> None:
    state = LiveState()
    changed = state.absorb([connector(number=2), connector(number=1), connector("Charging", number=2, received=1)])
    assert [r.key for r in changed] == [("CP-1", 1), ("CP-1", 2)]
    assert changed[1].connector.status == "Charging"


def test_a_subscriber_gets_the_rows_of_its_company_only() -> None:
    fanout = Fanout("feed")
    ours = fanout.subscribe("co_a")
    theirs = fanout.subscribe("co_b")
    woken = fanout.publish([row(company="co_a")], T0)
    assert woken == [ours]
    assert ours.take() == [row(company="co_a")]
    assert theirs.take() == []


def test_a_row_changed_again_while_queued_is_sent_once_in_its_latest_state_at_the_end() -> None:
    fanout = Fanout("feed")
    subscription = fanout.subscribe("co_a")
    fanout.publish([row("Preparing", number=1), row("Available", number=2), row("Charging", number=1)], T0)
    taken = subscription.take()
    assert isinstance(taken, list)
    assert [(r.key, r.connector.status) for r in taken] == [(("CP-1", 2), "Available"), (("CP-1", 1), "Charging")]


def test_a_subscriber_that_falls_behind_is_dropped_to_resync_and_holds_nothing() -> None:
    fanout = Fanout("feed")
    slow = fanout.subscribe("co_a", capacity=2)
    fanout.publish([row(number=n) for n in range(1, 4)], T0)
    assert slow.pending == {}
    assert slow.take() is RESYNC
    fanout.publish([row("Charging", number=1)], T0)
    assert slow.take() is RESYNC


def test_a_subscriber_that_keeps_up_is_never_dropped() -> None:
    fanout = Fanout("feed")
    subscription = fanout.subscribe("co_a", capacity=2)
    for n in range(10):
        fanout.publish([row(number=n % 2 + 1, received=n)], T0)
        assert subscription.take() != RESYNC


def test_a_stream_opened_after_its_page_is_sent_what_was_published_in_between() -> None:
    fanout = Fanout("feed")
    fanout.publish([row("Available", number=1)], T0)
    mark = fanout.mark(at(1))
    fanout.publish([row("Charging", number=2)], at(2))
    subscription = fanout.subscribe("co_a", since=mark)
    taken = subscription.take()
    assert isinstance(taken, list)
    assert [r.key for r in taken] == [("CP-1", 2)]


def test_a_stream_whose_page_is_older_than_the_kept_history_resyncs() -> None:
    fanout = Fanout("feed", history=2)
    mark = fanout.mark(T0)
    fanout.publish([row(number=n) for n in range(1, 5)], at(1))
    assert fanout.subscribe("co_a", since=mark).take() is RESYNC


def test_a_page_of_another_process_is_sent_the_whole_history_when_it_reaches_back_to_the_page() -> None:
    fanout = Fanout("here")
    fanout.publish([row("Charging", number=1)], at(1))
    subscription = fanout.subscribe("co_a", since=Mark("there", 7, at(2)))
    taken = subscription.take()
    assert isinstance(taken, list) and [r.key for r in taken] == [("CP-1", 1)]


def test_a_page_of_another_process_older_than_the_kept_history_resyncs() -> None:
    fanout = Fanout("here", history=1)
    fanout.publish([row(number=1), row(number=2)], at(60))
    assert fanout.subscribe("co_a", since=Mark("there", 7, at(1))).take() is RESYNC


def test_a_mark_round_trips_through_its_text() -> None:
    mark = Mark("abc123", 42, datetime(2026, 7, 1, 12, 0, 0, 123000, tzinfo=UTC))
    assert Mark.decode(mark.encode()) == mark


def test_text_that_is_no_mark_decodes_to_none() -> None:
    assert Mark.decode("") is None
    assert Mark.decode("a.b.c") is None
    assert Mark.decode("<x>.1.2") is None


def test_signing_out_ends_the_streams_of_that_session_only() -> None:
    fanout = Fanout("feed")
    mine = fanout.subscribe("co_a", session_hash="s1")
    other = fanout.subscribe("co_a", session_hash="s2")
    assert fanout.end_session("s1") == [mine]
    assert mine.take() is ENDED
    assert other.take() == []


def test_an_unsubscribed_stream_gets_nothing_more() -> None:
    fanout = Fanout("feed")
    subscription = fanout.subscribe("co_a")
    fanout.unsubscribe(subscription)
    assert fanout.publish([row()], T0) == []
    assert len(fanout) == 0
