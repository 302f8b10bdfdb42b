"""Transactions as the API lists them for partners (`transactions:read`): OCPP transactions and meter sessions in
one id order, since they share one id sequence (`sequences`); one of them with its meter samples, page by page;
and a station's OCPP transactions in progress.

The operator's views of the same rows, filtered, newest first and with their timelines, are `sessions`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.energy import kwh_to_wh, wh_to_kwh
from chargenet.domain.scopes import Scope
from chargenet.domain.text import INT32_MAX
from chargenet.errors import NotFound
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest, UnknownCursor, encode_cursor
from chargenet.services.reach import reachable_on_site, reachable_station, site_filter
from chargenet.services.views import Instant, View, optional
from chargenet.store.models import EdgeTransaction, MeterSample, MeterSession, Site

Source = Literal["ocpp", "meter"]
# Where a transaction charged, for which idTag and since when: columns of both its tables, as `Transaction` names them.
LOCATED = ("site_id", "station_id", "charge_point_id", "connector_id", "id_tag", "started_at")


class Transaction(View):
    """What every view of a transaction shows, from an OCPP station or detected from a meter (`source`): which one,
    where, for which idTag and since when."""

    transaction_id: int
    source: Source
    site_id: str
    station_id: str
    charge_point_id: str
    connector_id: int
    id_tag: str
    started_at: Instant


def located(row: EdgeTransaction | MeterSession | Row[Any]) -> dict[str, Any]:
    """The fields of `Transaction` that an OCPP transaction's row and a meter session's hold alike, by name."""
    return {name: getattr(row, name) for name in LOCATED}


class TransactionView(Transaction):
    """One transaction as the API lists it; `stoppedAt`, `meterStop`, `energy` and `reason` once it stopped."""

    meter_start: float
    active: bool
    stopped_at: Instant | None = optional()
    meter_stop: float | None = optional()
    energy: float | None = optional()  # kWh delivered, meterStop - meterStart, once stopped
    reason: str | None = optional()

    @classmethod
    def of(
        cls,
        source: Source,
        row: EdgeTransaction | MeterSession,
        transaction_id: int,
        meter_start_wh: int,
        meter_stop_wh: int | None,
        reason: str | None,
    ) -> TransactionView:
        stopped = row.stopped_at is not None and meter_stop_wh is not None
        return cls(
            transaction_id=transaction_id,
            source=source,
            **located(row),
            meter_start=wh_to_kwh(meter_start_wh),
            active=row.stopped_at is None,
            stopped_at=row.stopped_at if stopped else None,
            meter_stop=wh_to_kwh(meter_stop_wh) if stopped and meter_stop_wh is not None else None,
            energy=wh_to_kwh(meter_stop_wh - meter_start_wh) if stopped and meter_stop_wh is not None else None,
            reason=reason if stopped else None,
        )

    @classmethod
    def of_edge(cls, row: EdgeTransaction) -> TransactionView:
        return cls.of("ocpp", row, row.id, row.meter_start, row.meter_stop, row.stop_reason)

    @classmethod
    def of_meter(cls, row: MeterSession) -> TransactionView:
        return cls.of("meter", row, row.transaction_id, row.meter_start_wh, row.meter_stop_wh, row.reason)


async def list_transactions(
    session: AsyncSession,
    caller: Caller,
    page: PageRequest,
    *,
    site_id: str | None = None,
    charge_point_id: str | None = None,
    active: bool | None = None,
) -> Page[TransactionView]:
    """A page of transactions (OCPP and meter sessions, one id sequence) in id order, only on sites the caller
    reaches with `transactions:read`."""
    after = page.after_number(high=INT32_MAX)  # transaction ids are 32-bit (decisions)
    limit = page.fetch
    sites = select(Site.id).where(site_filter(caller.reach(Scope.TRANSACTIONS_READ))).scalar_subquery()
    edge = select(EdgeTransaction).where(EdgeTransaction.site_id.in_(sites)).order_by(EdgeTransaction.id).limit(limit)
    metered = (
        select(MeterSession).where(MeterSession.site_id.in_(sites)).order_by(MeterSession.transaction_id).limit(limit)
    )
    if after is not None:
        edge = edge.where(EdgeTransaction.id > after)
        metered = metered.where(MeterSession.transaction_id > after)
    if site_id is not None:
        edge = edge.where(EdgeTransaction.site_id == site_id)
        metered = metered.where(MeterSession.site_id == site_id)
    if charge_point_id is not None:
        edge = edge.where(EdgeTransaction.charge_point_id == charge_point_id)
        metered = metered.where(MeterSession.charge_point_id == charge_point_id)
    if active is not None:
        edge = edge.where(EdgeTransaction.stopped_at.is_(None) if active else EdgeTransaction.stopped_at.is_not(None))
        metered = metered.where(MeterSession.stopped_at.is_(None) if active else MeterSession.stopped_at.is_not(None))
    views = [TransactionView.of_edge(r) for r in await session.scalars(edge)]
    views += [TransactionView.of_meter(r) for r in await session.scalars(metered)]
    return page.page(sorted(views, key=lambda v: v.transaction_id)[:limit], lambda v: str(v.transaction_id))


async def active_on_station(session: AsyncSession, caller: Caller, station_id: str) -> list[TransactionView]:
    """The station's OCPP transactions in progress (those a remote stop can end), by charge point and connector."""
    await reachable_station(session, caller, Scope.TRANSACTIONS_READ, station_id)
    rows = await session.scalars(
        select(EdgeTransaction)
        .where(EdgeTransaction.station_id == station_id, EdgeTransaction.stopped_at.is_(None))
        .order_by(EdgeTransaction.charge_point_id, EdgeTransaction.connector_id, EdgeTransaction.id)
    )
    return [TransactionView.of_edge(row) for row in rows]


async def get_transaction(session: AsyncSession, caller: Caller, transaction_id: int) -> TransactionView:
    """One transaction of either kind, if the caller's `transactions:read` reaches its site; `NotFound` otherwise."""
    missing = NotFound("transaction", str(transaction_id))
    if not 0 < transaction_id <= INT32_MAX:
        raise missing
    row = await session.get(EdgeTransaction, transaction_id)
    if row is not None:
        return TransactionView.of_edge(await reachable_on_site(session, caller, Scope.TRANSACTIONS_READ, row, missing))
    metered = await session.get(MeterSession, transaction_id)
    return TransactionView.of_meter(await reachable_on_site(session, caller, Scope.TRANSACTIONS_READ, metered, missing))


class SampleView(View):
    """The meter at one instant of a transaction: its register (`energy`, kWh), what the transaction delivered so
    far (`delivered`, kWh), and the power (W) when it was reported."""

    at: Instant
    energy: float
    delivered: float
    power: float | None = optional()


def _sample_key(at: str) -> datetime:
    """The instant a page's key names; `UnknownCursor` for a key that is none (no page of samples gave it)."""
    try:
        instant = datetime.fromisoformat(at)
    except ValueError:
        instant = None
    if instant is None or instant.tzinfo is None:
        raise UnknownCursor(encode_cursor(at))
    return instant


async def transaction_samples(
    session: AsyncSession, caller: Caller, transaction_id: int, page: PageRequest
) -> Page[SampleView]:
    """A page of the meter samples its own station (or meter) reported for a transaction of either kind and either
    OCPP generation, oldest first; `NotFound` as `get_transaction`."""
    transaction = await get_transaction(session, caller, transaction_id)
    query = (
        select(MeterSample.at, MeterSample.energy_wh, MeterSample.power_w)
        .where(MeterSample.transaction_id == transaction_id, MeterSample.station_id == transaction.station_id)
        .order_by(MeterSample.at)
        .limit(page.fetch)
    )
    if page.after is not None:
        query = query.where(MeterSample.at > _sample_key(page.after))
    start = kwh_to_wh(transaction.meter_start)
    samples = [
        SampleView(at=at, energy=wh_to_kwh(energy), delivered=wh_to_kwh(energy - start), power=power)
        for at, energy, power in await session.execute(query)
    ]
    return page.page(samples, lambda sample: sample.at.isoformat())
