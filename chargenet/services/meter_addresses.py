"""One meter at a bus address, whatever its role: a session's meter and a grid meter at the same unit of one bus
would read the same registers, and each would count the other's current as its own."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.errors import Conflict
from chargenet.meters.records import transport_of
from chargenet.store.models import GridMeter, Meter


async def check_address_free(session: AsyncSession, bus_key: str, unit_id: int, *, meter_id: str | None = None) -> None:
    """Conflict when a meter other than `meter_id`, of a session or of a grid, answers at `unit_id` on `bus_key`."""
    sessions = await session.scalars(select(Meter).where(Meter.unit_id == unit_id))
    grids = await session.scalars(select(GridMeter).where(GridMeter.unit_id == unit_id))
    others: list[Meter | GridMeter] = [*sessions, *grids]
    for other in others:
        if other.id != meter_id and transport_of(other).key == bus_key:
            raise Conflict(f"unit {unit_id} on {bus_key} is already meter {other.id!r}")
