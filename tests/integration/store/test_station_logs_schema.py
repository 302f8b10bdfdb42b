"""Migration 0035 (station logs) on both backends: a slot and the log received through it are kept, a second log
of one slot is refused by the store, and it rolls back."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from chargenet.store import schema
from chargenet.store.db import Store

AT = "'2026-01-01 00:00:00+00:00'"


async def test_station_logs_keep_one_log_per_slot_and_roll_back(empty_database_url: str) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0034")
        async with store.engine.begin() as connection:
            for statement in (
                f"INSERT INTO companies (id, name, created_at) VALUES ('co_1', 'Acme', {AT})",
                f"INSERT INTO sites (id, company_id, name, created_at) VALUES ('site_1', 'co_1', 'Depot', {AT})",
                f"INSERT INTO stations (id, site_id, charge_points, created_at) VALUES ('CS-1', 'site_1', 1, {AT})",
            ):
                await connection.execute(text(statement))
        await schema.upgrade(store, "0035")
        log = (
            "INSERT INTO station_logs (station_id, request_id, file_name, size, sha256, received_at, path)"
            f" VALUES ('CS-1', 1, 'diag.txt', 5, 'ab', {AT}, 'station-logs/CS-1/1-diag.txt')"
        )
        async with store.engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO log_upload_slots (station_id, token_hash, requested_at, expires_at, max_bytes)"
                    f" VALUES ('CS-1', 'ab12', {AT}, {AT}, 1024)"
                )
            )
            await connection.execute(text(log))
        with pytest.raises(IntegrityError):
            async with store.engine.begin() as connection:
                await connection.execute(text(log))
        await schema.downgrade(store, "0034")
        async with store.engine.connect() as connection:
            assert (await connection.execute(text("SELECT count(*) FROM stations"))).scalar_one() == 1
    finally:
        await store.dispose()
