"""Charging sessions as an operator reads them: OCPP transactions and meter sessions alike (`transactions:read`).

The API's list of the same rows is `transactions.list_transactions`, in id order for partners; these are the
operator's views: filtered by site, station, idTag, time and state, newest first, with energy, duration and
reasons; one session with the OCPP messages that concern it (its timeline); and the whole of a filtered list read
in batches, each in a unit of work of its own, so that an export of a year of sessions never holds it in memory
nor keeps one transaction open while a browser downloads; and a session's meter values, its energy over time
(`meter_samples`, written by the edge and the meters in their batches).

OCPP transactions and meter sessions share one id sequence (`sequences`), so one keyset (the id) pages both.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, cast

from sqlalchemy import ColumnElement, Row, ScalarSelect, Select, Table, case, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.domain.text import INT32_MAX
from chargenet.errors import InvalidInput, NotFound
from chargenet.services.callers import Caller
from chargenet.services.message_log import GAP, MessageView, message_view
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_on_site, site_filter
from chargenet.services.transactions import Source, Transaction, located
from chargenet.services.views import Instant
from chargenet.store.db import Transactions
from chargenet.store.models import EdgeTransaction, MeterSample, MeterSession, OcppMessage, Site

EXPORT_BATCH = 2000
SAMPLE_LIMIT = 6000  # a session's samples read for its chart: 50 hours at one sample per 30 s
TIMELINE_LIMIT = 2000  # frames looked at for one timeline; beyond, the page links to the message log
TIMELINE_MARGIN = timedelta(minutes=2)  # before the start and after the stop: the Authorize, the last status
TIMELINE_ACTIONS = (
    "Authorize",
    "RemoteStartTransaction",
    "StartTransaction",
    "StatusNotification",
    "MeterValues",
    "RemoteStopTransaction",
    "StopTransaction",
)

State = Literal["active", "completed"]


class SessionView(Transaction):
    """One session: energy in kWh (`energy` is what was delivered, or so far for a meter session still charging;
    None while an OCPP transaction runs, whose station reports its meter at the stop), and why it started and
    stopped."""

    stopped_at: Instant | None
    meter_start_wh: int
    meter_stop_wh: int | None
    energy_wh: int | None
    start_reason: str
    stop_reason: str | None
    meter_id: str | None = None
    ocpp_connector_id: int | None = None
    upstream_id: int | None = None

    @property
    def active(self) -> bool:
        return self.stopped_at is None

    def duration(self, now: datetime) -> timedelta:
        return (self.stopped_at or now) - self.started_at


def last_sampled_wh() -> ScalarSelect[int]:
    """The register of an OCPP transaction's newest stored meter value (its MeterValues while charging), read
    beside the transaction: how much it has delivered so far, while the station reports its meter only at the
    stop otherwise."""
    return (
        select(func.max(MeterSample.energy_wh))
        .where(MeterSample.transaction_id == EdgeTransaction.id, MeterSample.station_id == EdgeTransaction.station_id)
        .scalar_subquery()
    )


def _of_edge(row: EdgeTransaction | Row[Any], last_sampled: int | None = None) -> SessionView:
    stopped = row.stopped_at is not None and row.meter_stop is not None
    authorization = row.auth_status or "not decided"
    if stopped and row.meter_stop is not None:
        energy: int | None = row.meter_stop - row.meter_start
    elif row.stopped_at is None and last_sampled is not None:
        energy = max(0, last_sampled - row.meter_start)
    else:
        energy = None
    return SessionView(
        transaction_id=row.id,
        source="ocpp",
        **located(row),
        stopped_at=row.stopped_at,
        meter_start_wh=row.meter_start,
        meter_stop_wh=row.meter_stop if stopped else None,
        energy_wh=energy,
        start_reason=f"StartTransaction from the station; idTag {authorization}",
        stop_reason=(row.stop_reason or "Local") if row.stopped_at is not None else None,
        ocpp_connector_id=row.ocpp_connector_id,
        upstream_id=row.upstream_id,
    )


def _of_meter(row: MeterSession | Row[Any]) -> SessionView:
    stopped = row.stopped_at is not None and row.meter_stop_wh is not None
    last = row.meter_stop_wh if stopped and row.meter_stop_wh is not None else row.last_charging_wh
    return SessionView(
        transaction_id=row.transaction_id,
        source="meter",
        **located(row),
        stopped_at=row.stopped_at,
        meter_start_wh=row.meter_start_wh,
        meter_stop_wh=row.meter_stop_wh if stopped else None,
        energy_wh=last - row.meter_start_wh,
        start_reason="meter: charging detected (over the start threshold)",
        stop_reason=row.reason if row.stopped_at is not None else None,
        meter_id=row.meter_id,
    )


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """Which sessions: every one given is required. `since`/`until` bound the start (until is exclusive)."""

    site_id: str | None = None
    station_id: str | None = None
    id_tag: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    state: State | None = None
    source: Source | None = None

    def __post_init__(self) -> None:
        if self.state not in (None, "active", "completed"):
            raise InvalidInput("must be active or completed", field="state")
        if self.source not in (None, "ocpp", "meter"):
            raise InvalidInput("must be ocpp or meter", field="source")
        for name in ("site_id", "station_id", "id_tag"):
            value = getattr(self, name)
            if value is not None and len(value) > 255:
                raise InvalidInput("is longer than any id", field=name)
        if self.since is not None and self.until is not None and self.until < self.since:
            raise InvalidInput("is before the start of the period", field="until")


def _columns(model: type[EdgeTransaction] | type[MeterSession]) -> list[ColumnElement[Any]]:
    """The table's columns, read as plain rows: lists and exports read many, and ORM objects cost far more."""
    return list(cast(Table, model.__table__).columns)


def _query(model: type[EdgeTransaction] | type[MeterSession], sites: Any, where: SessionFilter) -> Select[Any]:
    """The filter over either table: OCPP transactions and meter sessions have the same columns for it."""
    clauses: list[ColumnElement[bool]] = [model.site_id.in_(sites)]
    if where.site_id is not None:
        clauses.append(model.site_id == where.site_id)
    if where.station_id is not None:
        clauses.append(model.station_id == where.station_id)
    if where.id_tag is not None:
        clauses.append(model.id_tag == where.id_tag)
    if where.since is not None:
        clauses.append(model.started_at >= where.since)
    if where.until is not None:
        clauses.append(model.started_at < where.until)
    if where.state is not None:
        stopped = model.stopped_at
        clauses.append(stopped.is_(None) if where.state == "active" else stopped.is_not(None))
    return select(*_columns(model)).where(*clauses)


def _edge_query(sites: Any, where: SessionFilter) -> Select[Any] | None:
    if where.source == "meter":
        return None
    so_far = case((EdgeTransaction.stopped_at.is_(None), last_sampled_wh()), else_=None)
    return _query(EdgeTransaction, sites, where).add_columns(so_far.label("last_sampled_wh"))


def _meter_query(sites: Any, where: SessionFilter) -> Select[Any] | None:
    return None if where.source == "ocpp" else _query(MeterSession, sites, where)


async def _batch(
    session: AsyncSession, caller: Caller, where: SessionFilter, *, limit: int, before: int | None, newest_first: bool
) -> list[SessionView]:
    """Up to `limit` sessions of both kinds, by id: descending below `before`, or ascending above it."""
    sites = select(Site.id).where(site_filter(caller.reach(Scope.TRANSACTIONS_READ))).scalar_subquery()
    views: list[SessionView] = []
    edge = _edge_query(sites, where)
    if edge is not None:
        key = EdgeTransaction.id
        if before is not None:
            edge = edge.where(key < before if newest_first else key > before)
        edge = edge.order_by(key.desc() if newest_first else key).limit(limit)
        views += [_of_edge(row, row.last_sampled_wh) for row in await session.execute(edge)]
    metered = _meter_query(sites, where)
    if metered is not None:
        key = MeterSession.transaction_id
        if before is not None:
            metered = metered.where(key < before if newest_first else key > before)
        metered = metered.order_by(key.desc() if newest_first else key).limit(limit)
        views += [_of_meter(row) for row in await session.execute(metered)]
    views.sort(key=lambda view: view.transaction_id, reverse=newest_first)
    return views[:limit]


async def list_sessions(
    session: AsyncSession, caller: Caller, page: PageRequest, where: SessionFilter
) -> Page[SessionView]:
    """A page of sessions on the sites the caller reaches, newest first (by transaction id)."""
    before = page.after_number()
    if before is not None:
        before = min(before, INT32_MAX + 1)  # transaction ids are 32-bit: beyond, every one is before
    views = await _batch(session, caller, where, limit=page.fetch, before=before, newest_first=True)
    return page.page(views, lambda view: str(view.transaction_id))


async def export_sessions(
    reading: Transactions, caller: Caller, where: SessionFilter, *, batch: int = EXPORT_BATCH
) -> AsyncIterator[SessionView]:
    """Every session the filter selects, oldest first, read `batch` at a time, each batch in a unit of work of
    its own."""
    last = 0
    while True:
        async with reading() as session:
            views = await _batch(session, caller, where, limit=batch, before=last, newest_first=False)
        for view in views:
            yield view
        if len(views) < batch:
            return
        last = views[-1].transaction_id


async def get_session(session: AsyncSession, caller: Caller, transaction_id: int) -> SessionView:
    """One session of either kind, if the caller's `transactions:read` reaches its site; `NotFound` otherwise."""
    missing = NotFound("transaction", str(transaction_id))
    if not 0 < transaction_id <= INT32_MAX:
        raise missing
    found = await session.get(EdgeTransaction, transaction_id)
    if found is None:
        metered = await session.get(MeterSession, transaction_id)
        return _of_meter(await reachable_on_site(session, caller, Scope.TRANSACTIONS_READ, metered, missing))
    reached = await reachable_on_site(session, caller, Scope.TRANSACTIONS_READ, found, missing)
    last = None
    if reached.stopped_at is None:
        last = await session.scalar(
            select(func.max(MeterSample.energy_wh)).where(
                MeterSample.transaction_id == reached.id, MeterSample.station_id == reached.station_id
            )
        )
    return _of_edge(reached, last)


# --- the timeline of one OCPP transaction -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Timeline:
    """The frames that concern a transaction, in the order they were logged; `cut` when more frames of its
    station and time were logged than a timeline looks at (`TIMELINE_LIMIT`): the rest are in the message log."""

    messages: list[MessageView]
    since: datetime
    until: datetime
    cut: bool


def _payload(frame: str) -> dict[str, Any] | None:
    try:
        message = json.loads(frame)
    except ValueError:
        return None
    if isinstance(message, list) and message and isinstance(message[-1], dict):
        return message[-1]
    return None


def _concerns(view: SessionView, message: MessageView, payload: dict[str, Any]) -> bool:
    """Whether a CALL is about this transaction: its id (the upstream's own for frames to and from the upstream),
    or, where OCPP names no transaction, its connector (and the idTag it was started with)."""
    transaction_id = view.transaction_id if message.peer == "station" else view.upstream_id
    if message.action in ("StopTransaction", "RemoteStopTransaction"):
        return transaction_id is not None and payload.get("transactionId") == transaction_id
    if message.action == "MeterValues" and "transactionId" in payload:
        return transaction_id is not None and payload.get("transactionId") == transaction_id
    on_connector = payload.get("connectorId") == view.ocpp_connector_id
    if message.action == "StartTransaction":
        return on_connector and payload.get("idTag") == view.id_tag and payload.get("meterStart") == view.meter_start_wh
    if message.action in ("RemoteStartTransaction", "Authorize"):
        return payload.get("idTag") == view.id_tag and payload.get("connectorId", view.ocpp_connector_id) == (
            view.ocpp_connector_id
        )
    return on_connector  # StatusNotification, and MeterValues without a transaction id


async def session_timeline(session: AsyncSession, caller: Caller, view: SessionView, now: datetime) -> Timeline:
    """The OCPP frames of `view` (a session the caller reached through `get_session`) from its station's log:
    the CALLs about it and their answers, to and from the station and the upstream, and any gap in between."""
    since = view.started_at - TIMELINE_MARGIN
    until = (view.stopped_at or now) + TIMELINE_MARGIN
    if view.source != "ocpp":
        return Timeline([], since, until, cut=False)
    query = (
        select(OcppMessage)
        .where(
            OcppMessage.station_id == view.station_id,
            OcppMessage.at >= since,
            OcppMessage.at <= until,
            or_(OcppMessage.action.in_(TIMELINE_ACTIONS), OcppMessage.direction == GAP),
        )
        .order_by(OcppMessage.id)
        .limit(TIMELINE_LIMIT + 1)
    )
    rows = [message_view(row) for row in await session.scalars(query)]
    cut = len(rows) > TIMELINE_LIMIT
    kept: list[MessageView] = []
    calls: set[tuple[str, str]] = set()  # (peer, message id) of the CALLs kept, whose answers are kept too
    for message in rows[:TIMELINE_LIMIT]:
        if message.is_gap:
            kept.append(message)
        elif message.message_type == 2:
            payload = _payload(message.frame)
            if payload is not None and _concerns(view, message, payload):
                kept.append(message)
                if message.message_id is not None:
                    calls.add((message.peer, message.message_id))
        elif (message.peer, message.message_id or "") in calls:
            kept.append(message)
    return Timeline(kept, since, until, cut)


# --- the meter values of one session -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EnergySample:
    """The meter at one instant of a session: its register, what the session delivered so far, and the power
    when it was reported."""

    at: datetime
    energy_wh: int
    delivered_wh: int
    power_w: float | None


@dataclass(frozen=True, slots=True)
class SessionSamples:
    """A session's meter values, oldest first: its start reading, the stored samples, its stop reading; `cut`
    when it has more stored samples than `SAMPLE_LIMIT` (the first ones are given)."""

    samples: list[EnergySample]
    cut: bool


async def session_samples(session: AsyncSession, view: SessionView) -> SessionSamples:
    """The meter values of `view` (a session the caller reached through `get_session`): only what its own station
    reported, since a station may name any transaction id in its MeterValues."""
    rows = (
        await session.execute(
            select(MeterSample.at, MeterSample.energy_wh, MeterSample.power_w)
            .where(MeterSample.transaction_id == view.transaction_id, MeterSample.station_id == view.station_id)
            .order_by(MeterSample.at)
            .limit(SAMPLE_LIMIT + 1)
        )
    ).all()
    cut = len(rows) > SAMPLE_LIMIT
    start = view.meter_start_wh
    found = [EnergySample(view.started_at, start, 0, None)]
    found += [EnergySample(at, energy, energy - start, power) for at, energy, power in rows[:SAMPLE_LIMIT]]
    if view.stopped_at is not None and view.meter_stop_wh is not None:
        found.append(EnergySample(view.stopped_at, view.meter_stop_wh, view.meter_stop_wh - start, None))
    found.sort(key=lambda sample: sample.at)
    return SessionSamples(found, cut)


async def sessions_of_meter(session: AsyncSession, caller: Caller, meter_id: str, *, limit: int) -> list[SessionView]:
    """The newest `limit` sessions detected from a meter, on sites the caller reaches with `transactions:read`."""
    sites = select(Site.id).where(site_filter(caller.reach(Scope.TRANSACTIONS_READ))).scalar_subquery()
    query = (
        select(*_columns(MeterSession))
        .where(MeterSession.meter_id == meter_id, MeterSession.site_id.in_(sites))
        .order_by(MeterSession.transaction_id.desc())
        .limit(limit)
    )
    return [_of_meter(row) for row in await session.execute(query)]
