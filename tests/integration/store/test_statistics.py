"""The planner's statistics on SQLite (`Store.take_statistics`, at each start of a serving process): once taken,
the sessions list reads the sessions in progress through an index that holds them apart, instead of every
session of the company's sites."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert, select, text
from sqlalchemy.dialects import sqlite

from chargenet.clock import ManualClock
from chargenet.keys import KeyStore
from chargenet.services import sessions
from chargenet.store import schema
from chargenet.store.db import Store
from chargenet.store.models import EdgeTransaction, Site
from tests.factories import make_tenant

START = datetime(2026, 7, 1, tzinfo=UTC)


async def plan_of_the_sessions_in_progress(store: Store) -> str:
    query = sessions._edge_query(select(Site.id).scalar_subquery(), sessions.SessionFilter(state="active"))
    assert query is not None
    compiled = (
        query.order_by(EdgeTransaction.id.desc())
        .limit(51)
        .compile(dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True})
    )
    async with store.read() as session:
        rows = await session.execute(text(f"EXPLAIN QUERY PLAN {compiled}"))
        return " / ".join(str(row[3]) for row in rows)


async def test_once_taken_the_sessions_in_progress_are_read_through_their_index(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'stats.db'}")
    try:
        await schema.prepare_schema(store)
        tenant = await make_tenant(store, KeyStore(tmp_path / "keys"), clock.now(), station_id="CS-1")
        history = [
            {
                "id": n,
                "station_id": "CS-1",
                "site_id": tenant.site_id,
                "charge_point_id": "CS-1",
                "connector_id": 1,
                "ocpp_connector_id": 1,
                "id_tag": "TAG",
                "started_at": START + timedelta(minutes=n),
                "meter_start": n,
                "stopped_at": START + timedelta(minutes=n, seconds=30),
                "meter_stop": n + 1,
                "created_at": START,
            }
            for n in range(1, 2001)
        ]
        async with store.transaction() as session:
            await session.execute(insert(EdgeTransaction), history)
        # Without statistics: every session of the site, through the site's index, then sorted.
        assert "USING INDEX ix_edge_transactions_site_id" in await plan_of_the_sessions_in_progress(store)
        await store.take_statistics()
        # With them: an index that holds the sessions in progress apart, read in order of id.
        plan = await plan_of_the_sessions_in_progress(store)
        assert "ix_edge_transactions_site_id" not in plan and (
            "ix_edge_tx_in_progress" in plan or "stopped_at=?" in plan
        )
    finally:
        await store.dispose()
