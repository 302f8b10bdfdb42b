"""Migration 0021 (alerts) on both backends: it applies over a store with data, and the store itself refuses a
second alert not yet cleared for the same rule and subject."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from chargenet.store import schema
from chargenet.store.db import Store

AT = "'2026-01-01 00:00:00+00:00'"


async def test_the_alerts_migration_applies_over_a_store_with_data_and_keeps_one_open_alert_per_subject(
    empty_database_url: str,
) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0020")
        async with store.engine.begin() as connection:
            await connection.execute(
                text(f"INSERT INTO companies (id, name, created_at) VALUES ('co_1', 'Acme', {AT})")
            )
        await schema.upgrade(store)
        open_alert = (
            "INSERT INTO alerts (rule_id, company_id, kind, subject_id, subject, since, raised_at)"
            f" VALUES ('arule_1', 'co_1', 'station_offline', 'ST-1', 'station ST-1', {AT}, {AT})"
        )
        async with store.engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO alert_rules (id, company_id, kind, threshold_minutes, enabled, recipients,"
                    " created_at, updated_at)"
                    f" VALUES ('arule_1', 'co_1', 'station_offline', 10, true, 'ops@example.org', {AT}, {AT})"
                )
            )
            await connection.execute(text(open_alert))
        with pytest.raises(IntegrityError):
            async with store.engine.begin() as connection:
                await connection.execute(text(open_alert))
        async with store.engine.begin() as connection:
            await connection.execute(text(f"UPDATE alerts SET cleared_at = {AT}"))
            await connection.execute(text(open_alert))
            count = (await connection.execute(text("SELECT count(*) FROM alerts"))).scalar_one()
        assert count == 2
        await schema.downgrade(store, "0020")
        await schema.upgrade(store)
    finally:
        await store.dispose()
