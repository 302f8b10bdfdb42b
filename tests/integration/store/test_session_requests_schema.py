"""Migration 0024 (session requests) on both backends: it applies over a store with a station, the store deletes
a station's requests with it, and it rolls back."""

from __future__ import annotations

from sqlalchemy import inspect, text

from chargenet.store import schema
from chargenet.store.db import Store

AT = "'2026-01-01 00:00:00+00:00'"


async def test_the_session_requests_migration_applies_over_a_store_with_a_station_and_rolls_back(
    empty_database_url: str,
) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0022")
        async with store.engine.begin() as connection:
            for statement in (
                f"INSERT INTO companies (id, name, created_at) VALUES ('co_1', 'Acme', {AT})",
                f"INSERT INTO sites (id, company_id, name, created_at) VALUES ('site_1', 'co_1', 'Depot', {AT})",
                f"INSERT INTO stations (id, site_id, charge_points, created_at) VALUES ('ST-1', 'site_1', 1, {AT})",
            ):
                await connection.execute(text(statement))
        await schema.upgrade(store, "0024")
        async with store.engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO session_requests (id, site_id, station_id, charge_point_id, connector_id,"
                    " ocpp_connector_id, id_tag, requested_by, requested_at, status) VALUES ('sreq_1', 'site_1',"
                    f" 'ST-1', 'ST-1', 1, 1, 'TAG1', 'application app_1', {AT}, 'Pending')"
                )
            )
            await connection.execute(text("DELETE FROM stations WHERE id = 'ST-1'"))
            left = (await connection.execute(text("SELECT count(*) FROM session_requests"))).scalar_one()
        assert left == 0
        await schema.downgrade(store, "0022")
        async with store.engine.connect() as connection:
            tables = set(await connection.run_sync(lambda c: inspect(c).get_table_names()))
        assert "session_requests" not in tables
    finally:
        await store.dispose()
