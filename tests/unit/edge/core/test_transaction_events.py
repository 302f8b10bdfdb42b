"""Transactions the station names itself, planned (core.transaction_events Rules 1-4 and 6)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from chargenet.domain.events import StopReason
from chargenet.domain.evse import map_stop_reason
from chargenet.domain.tenants import ConnectorAddress
from chargenet.edge.core import transaction_events as te
from chargenet.edge.core.messages import ConnectorRef, IdToken, TransactionEventKind, TransactionReport

T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
STARTED = TransactionReport(
    kind=TransactionEventKind.STARTED,
    station_transaction_id="TX-1",
    seq_no=0,
    timestamp=T0,
    trigger="Authorized",
    offline=False,
    connector=ConnectorRef(ConnectorAddress("CS-1", 1), 1),
    token=IdToken("04A2B3C4", "ISO14443"),
    charging=None,
    stopped=None,
    meter_begin_wh=1000,
    meter_end_wh=None,
    meter_first_wh=900,
    meter_last_wh=1000,
)
RUNNING = te.KnownTransaction(7, last_seq_no=2, ended=False, meter_start_wh=1000, meter_last_wh=2500)


def test_a_start_with_token_reading_and_connector_starts_at_the_begin_reading() -> None:
    assert te.plan(STARTED, None) == te.Start(1000, None)


def test_without_a_begin_reading_the_earliest_reading_is_the_start() -> None:
    assert te.plan(replace(STARTED, meter_begin_wh=None), None) == te.Start(900, None)


@pytest.mark.parametrize(
    "report",
    [
        replace(STARTED, token=None),
        replace(STARTED, meter_begin_wh=None, meter_first_wh=None),
        replace(STARTED, kind=TransactionEventKind.UPDATED, connector=None),
    ],
    ids=["no token yet", "no reading yet", "an event for a transaction the edge never started"],
)
def test_an_event_that_cannot_start_its_transaction_is_acknowledged_and_ignored(report: TransactionReport) -> None:
    assert te.plan(report, None) == te.Ignore(te.Ignored.NOT_STARTED)


def test_the_next_seq_no_updates_without_a_gap() -> None:
    updated = replace(STARTED, kind=TransactionEventKind.UPDATED, seq_no=3, meter_last_wh=3000)
    assert te.plan(updated, RUNNING) == te.Update(0, 3000)


def test_a_seq_no_beyond_the_next_is_applied_and_the_gap_counted() -> None:
    assert te.plan(replace(STARTED, kind=TransactionEventKind.UPDATED, seq_no=6), RUNNING) == te.Update(3, 1000)


@pytest.mark.parametrize("seq_no", [0, 2], ids=["going backwards", "resent"])
def test_a_seq_no_at_or_below_the_last_applied_is_ignored(seq_no: int) -> None:
    report = replace(STARTED, kind=TransactionEventKind.UPDATED, seq_no=seq_no)
    assert te.plan(report, RUNNING) == te.Ignore(te.Ignored.RESENT)


def test_ended_stops_at_the_end_reading_with_the_mapped_reason() -> None:
    ended = replace(
        STARTED,
        kind=TransactionEventKind.ENDED,
        seq_no=3,
        stopped=map_stop_reason("StoppedByEV"),
        meter_end_wh=4000,
        meter_last_wh=4100,
    )
    assert te.plan(ended, RUNNING) == te.Stop(0, 4000, StopReason.EV_DISCONNECTED, "StoppedByEV")


def test_ended_without_a_reading_stops_at_the_latest_reported() -> None:
    ended = replace(STARTED, kind=TransactionEventKind.ENDED, seq_no=3, meter_begin_wh=None, meter_last_wh=None)
    assert te.plan(ended, RUNNING) == te.Stop(0, 2500, StopReason.LOCAL, None)


def test_an_event_after_the_end_is_a_resend() -> None:
    ended = replace(RUNNING, ended=True)
    assert te.plan(replace(STARTED, kind=TransactionEventKind.ENDED, seq_no=9), ended) == te.Ignore(te.Ignored.RESENT)


def test_an_ended_that_is_the_first_event_starts_and_stops_its_transaction() -> None:
    ended = replace(STARTED, kind=TransactionEventKind.ENDED, meter_end_wh=5000, stopped=map_stop_reason("Local"))
    assert te.plan(ended, None) == te.Start(1000, te.Stop(0, 5000, StopReason.LOCAL, None))


def test_a_token_given_before_the_first_reading_starts_the_transaction_with_it() -> None:
    started = replace(STARTED, meter_begin_wh=None, meter_first_wh=None, meter_last_wh=None)
    assert te.plan(started, None) == te.Ignore(te.Ignored.NOT_STARTED)
    updated = replace(STARTED, kind=TransactionEventKind.UPDATED, seq_no=1, token=None, connector=None)
    assert te.plan(te.with_earlier(updated, te.remembered(started)), None) == te.Start(1000, None)


PLUGGED_IN = replace(STARTED, trigger="CablePluggedIn", token=None, meter_first_wh=1000)
BADGED = replace(
    STARTED,
    kind=TransactionEventKind.UPDATED,
    seq_no=1,
    timestamp=T0 + timedelta(minutes=2),
    trigger="Authorized",
    connector=None,
    meter_begin_wh=None,
    meter_first_wh=1100,
    meter_last_wh=1100,
)


def test_a_plug_first_started_without_a_token_waits_for_one() -> None:
    assert te.plan(PLUGGED_IN, None) == te.Ignore(te.Ignored.NOT_STARTED)


def test_the_token_of_a_later_event_starts_a_plug_first_transaction_on_the_evse_started_named() -> None:
    report = te.with_earlier(BADGED, te.remembered(PLUGGED_IN))
    assert (report.connector, report.token) == (STARTED.connector, STARTED.token)
    assert te.plan(report, None) == te.Start(1000, None)


def test_a_plug_first_transaction_starts_at_the_reading_and_time_it_began_with() -> None:
    report = te.with_earlier(BADGED, te.remembered(PLUGGED_IN))
    assert (report.meter_begin_wh, report.meter_first_wh, report.meter_last_wh) == (1000, 1000, 1100)
    assert (report.began_at, report.timestamp) == (T0, BADGED.timestamp)


def test_what_earlier_events_said_adds_up_over_several_unstarted_events() -> None:
    no_reading = replace(PLUGGED_IN, meter_begin_wh=None, meter_first_wh=None, meter_last_wh=None)
    charging = replace(BADGED, token=None, seq_no=1, meter_first_wh=1200)
    kept = te.remembered(te.with_earlier(charging, te.remembered(no_reading)))
    assert kept == te.Unstarted(T0, None, STARTED.connector, None, 1200)
    assert te.plan(te.with_earlier(replace(BADGED, seq_no=2, meter_first_wh=1300), kept), None) == te.Start(1200, None)


def test_an_ended_that_cannot_start_its_transaction_ends_it_unstarted() -> None:
    ended = replace(PLUGGED_IN, kind=TransactionEventKind.ENDED, seq_no=1, stopped=map_stop_reason("EVDisconnected"))
    assert te.plan(ended, None) == te.Ignore(te.Ignored.ENDED_UNSTARTED)
