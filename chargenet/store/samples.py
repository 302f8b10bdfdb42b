"""Writing and purging meter-value samples (`MeterSample`), for the edge's and the meters' batches alike."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import cast

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.samples import Sample
from chargenet.store.db import Store
from chargenet.store.models import MeterSample
from chargenet.store.purge import purge_in_batches


async def write(session: AsyncSession, samples: Sequence[Sample]) -> None:
    """Insert the samples in one statement; one already stored (a resent MeterValues) is left as it was."""
    if not samples:
        return
    dialect = session.get_bind().dialect.name
    insert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(MeterSample)
    rows = list({(s.transaction_id, s.station_id, s.at): s.row() for s in samples}.values())
    await session.execute(insert.on_conflict_do_nothing(), rows)


_samples = cast(Table, MeterSample.__table__)


async def purge(store: Store, before: datetime) -> int:
    """Delete the samples taken before `before`, in short transactions (`purge_in_batches`); returns how many."""
    return await purge_in_batches(store, _samples, _samples.c.at < before)
