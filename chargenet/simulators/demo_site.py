"""What `make demo`'s simulators find on the demo site: their stations, created on the first start and kept as
they are on the next ones (a station's password and connectors survive a restart)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.context import AppContext
from chargenet.errors import NotFound
from chargenet.services import stations
from chargenet.services.callers import OPERATOR


async def ensure_station(
    context: AppContext, session: AsyncSession, site_id: str, station_id: str, *, password: str | None = None
) -> None:
    """The station `station_id` of the demo site, with two connectors, unless it exists already."""
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
            connectors=2,
            now=context.clock.now(),
        )
