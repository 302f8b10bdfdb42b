"""Transactions as an operator reads them: OCPP and meter sessions alike (`transactions:read`).

The API's list (`sessions.list_transactions`) pages them in id order for partners; these are the operator's
views of the same rows: filtered by site, station, idTag, time and state, newest first, with energy, duration
and reasons, one transaction with the OCPP messages that concern it, and the whole of a filtered list read
in batches, so that an export never holds it in memory.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.errors import NotFound
from chargenet.services.callers import Caller
from chargenet.services.sessions import TransactionView
from chargenet.store.models import EdgeTransaction, Site, Station


async def active_on_station(session: AsyncSession, caller: Caller, station_id: str) -> list[TransactionView]:
    """The station's OCPP transactions in progress (those a remote stop can end), by charge point and connector."""
    station = await session.get(Station, station_id)
    site = await session.get(Site, station.site_id) if station is not None else None
    if station is None or site is None or not caller.allows(Scope.TRANSACTIONS_READ, site.company_id, site.id):
        raise NotFound("station", station_id)
    rows = await session.scalars(
        select(EdgeTransaction)
        .where(EdgeTransaction.station_id == station_id, EdgeTransaction.stopped_at.is_(None))
        .order_by(EdgeTransaction.charge_point_id, EdgeTransaction.connector_id, EdgeTransaction.id)
    )
    return [TransactionView.of_edge(row) for row in rows]
