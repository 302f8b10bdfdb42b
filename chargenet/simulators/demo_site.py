"""What `make demo`'s simulators find on the demo site: their stations, created on the first start and kept as
they are on the next ones (a station's password and connectors survive a restart)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.context import AppContext
from chargenet.errors import NotFound
from chargenet.services import stations
from chargenet.services.callers import OPERATOR


async def ensure_station(
    context: AppContext,
    session: AsyncSession,
    site_id: str,
    station_id: str,
    *,
    password: str | None = None,
    ocpp201: bool = False,
) -> None:
    """The station `station_id` of the demo site, with two connectors, unless it exists already. A 2.0.1 station's
    two are two EVSEs of one connector each: an EVSE is a charge point (docs/edge.md, "The tree")."""
    try:
        await stations.get_station(session, OPERATOR, station_id)
    except NotFound:
        await stations.create_station(
            session,
            OPERATOR,
            context.keys.secret_hasher(),
            context.keys.credential_cipher(),
            site_id=site_id,
            station_id=station_id,
            password=password,
            charge_points=2 if ocpp201 else 1,
            connectors=1 if ocpp201 else 2,
            now=context.clock.now(),
        )
