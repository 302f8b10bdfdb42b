"""Transactions the station names itself (2.0.1 TransactionEvent), planned against what the store knows of them.

Rules (decisions.md §5, "Events from 2.0.1"):
- Rule 1: the edge's transaction starts at the first event of the station's transaction that carries a token,
  an energy reading and the connector (usually Started): it gets an id from the service-wide sequence (the
  same as 1.6's, `transactions` Rule 1) and raises StartTransaction, its meterStart the reading with context
  Transaction.Begin, else the earliest in the event. Events before that one are acknowledged and logged.
- Rule 2: events of one transaction are numbered by `seqNo`. One numbered at or below the last applied is a
  resend or a message that went back in time: acknowledged, applied to nothing, logged. One numbered above the
  next expected is applied, and the gap is logged (messages the station never delivered).
- Rule 3: Ended closes the transaction and raises StopTransaction, its meterStop the reading with context
  Transaction.End, else the latest in the event, else the latest the transaction reported; an Ended that is
  also its first event with a token and a reading starts and stops it (both events). A later event of an ended
  transaction is a resend (Rule 2's answer).
- Rule 4: an event naming a transaction the edge never started and that cannot start it (no token, no
  reading) is acknowledged and logged: a station that lost its transaction must not be told to resend forever.
  An Ended that cannot start it ends it unstarted: what earlier events said of it is forgotten.
- Rule 5: `offline` events, replayed by the station after a reconnect, are applied in the order they come, as
  any other: their timestamps are the station's.
- Rule 6: what earlier events of a transaction not yet started said counts for its later events (`Unstarted`):
  its token and connector (OCPP 2.0.1 sends the EVSE in the first event only, so a plug-first Started names it and
  a later Updated brings the token), its Transaction.Begin and earliest readings (the start's meterStart is the
  reading the transaction began at, not the one of the event that carried the token), and when it began (the
  start's time). It is kept in the store, so it counts across a reconnect too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from chargenet.domain.events import StopReason
from chargenet.edge.core.messages import ConnectorRef, IdToken, TransactionEventKind, TransactionReport


@dataclass(frozen=True, slots=True)
class KnownTransaction:
    """What the store holds of the station's transaction."""

    transaction_id: int
    last_seq_no: int
    ended: bool
    meter_start_wh: int
    meter_last_wh: int | None


class Ignored(StrEnum):
    RESENT = "resent"  # Rule 2 / Rule 3: at or below the last applied seqNo, or after the end
    NOT_STARTED = "not started"  # Rule 4: no token or reading yet to start it with
    ENDED_UNSTARTED = "ended before it started"  # Rule 4: an Ended with nothing to start it with


@dataclass(frozen=True, slots=True)
class Ignore:
    why: Ignored


@dataclass(frozen=True, slots=True)
class Start:
    meter_start_wh: int
    stop: Stop | None  # an Ended that starts its transaction also ends it (Rule 3)


@dataclass(frozen=True, slots=True)
class Update:
    gap: int  # how many seqNos were skipped (Rule 2); 0 in order
    meter_last_wh: int | None


@dataclass(frozen=True, slots=True)
class Stop:
    gap: int
    meter_stop_wh: int
    reason: StopReason
    station_reason: str | None


TransactionPlan = Ignore | Start | Update | Stop


def _stop(report: TransactionReport, gap: int, fallback_wh: int) -> Stop:
    meter = report.meter_end_wh if report.meter_end_wh is not None else report.meter_last_wh
    stopped = report.stopped
    return Stop(
        gap,
        meter if meter is not None else fallback_wh,
        stopped.reason if stopped is not None else StopReason.LOCAL,
        stopped.station_reason if stopped is not None else None,
    )


def plan(report: TransactionReport, known: KnownTransaction | None) -> TransactionPlan:
    """Rules 1-4 for one TransactionEvent."""
    if known is None:
        meter = report.meter_begin_wh if report.meter_begin_wh is not None else report.meter_first_wh
        if report.token is None or meter is None or report.connector is None:
            ended = report.kind is TransactionEventKind.ENDED
            return Ignore(Ignored.ENDED_UNSTARTED if ended else Ignored.NOT_STARTED)
        stop = _stop(report, 0, meter) if report.kind is TransactionEventKind.ENDED else None
        return Start(meter, stop)
    if known.ended or report.seq_no <= known.last_seq_no:
        return Ignore(Ignored.RESENT)
    gap = report.seq_no - known.last_seq_no - 1
    if report.kind is TransactionEventKind.ENDED:
        fallback = known.meter_last_wh if known.meter_last_wh is not None else known.meter_start_wh
        return _stop(report, gap, fallback)
    return Update(gap, report.meter_last_wh)


@dataclass(frozen=True, slots=True)
class Unstarted:
    """Rule 6: what earlier events of a transaction not yet started said."""

    began_at: datetime  # the earliest event's timestamp
    token: IdToken | None = None
    connector: ConnectorRef | None = None
    meter_begin_wh: int | None = None
    meter_first_wh: int | None = None


def with_earlier(report: TransactionReport, earlier: Unstarted | None) -> TransactionReport:
    """Rule 6: the report, with what earlier events gave: the token and connector where it gives none, their
    readings before its own, and the time the transaction began."""
    if earlier is None:
        return report
    return replace(
        report,
        token=report.token or earlier.token,
        connector=report.connector or earlier.connector,
        meter_begin_wh=earlier.meter_begin_wh if earlier.meter_begin_wh is not None else report.meter_begin_wh,
        meter_first_wh=earlier.meter_first_wh if earlier.meter_first_wh is not None else report.meter_first_wh,
        began_at=min(earlier.began_at, report.began_at or report.timestamp),
    )


def remembered(report: TransactionReport) -> Unstarted:
    """Rule 6: what a report (with what earlier events gave) leaves for the transaction's later events."""
    return Unstarted(
        report.began_at or report.timestamp,
        report.token,
        report.connector,
        report.meter_begin_wh,
        report.meter_first_wh,
    )
