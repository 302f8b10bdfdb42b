"""Writing and purging meter-value samples (`MeterSample`), for the edge's and the meters' batches alike."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.samples import Sample
from chargenet.store.db import LONG
from chargenet.store.models import MeterSample


async def write(session: AsyncSession, samples: Sequence[Sample]) -> None:
    """Insert the samples in one statement; one already stored (a resent MeterValues) is left as it was."""
    if not samples:
        return
    dialect = session.get_bind().dialect.name
    insert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(MeterSample)
    rows = list({(s.transaction_id, s.station_id, s.at): s.row() for s in samples}.values())
    await session.execute(insert.on_conflict_do_nothing(), rows)


async def purge(session: AsyncSession, before: datetime) -> None:
    await session.execute(delete(MeterSample).where(MeterSample.at < before).execution_options(**LONG))
