"""Migration 0033 (local list idTokens) on both backends: entries stored before are ISO14443 cards, a 2.0.1
token of 36 characters fits, and it rolls back."""

from __future__ import annotations

from sqlalchemy import text

from chargenet.store import schema
from chargenet.store.db import Store

AT = "'2026-01-01 00:00:00+00:00'"
TOKEN = "NL-TNM-C12345678-X-EXTRA-LONG-TOKEN1"  # 36 characters


async def test_entries_stored_before_are_iso14443_cards_and_a_36_character_token_fits(
    empty_database_url: str,
) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0032")
        async with store.engine.begin() as connection:
            for statement in (
                f"INSERT INTO companies (id, name, created_at) VALUES ('co_1', 'Acme', {AT})",
                f"INSERT INTO sites (id, company_id, name, created_at) VALUES ('site_1', 'co_1', 'Depot', {AT})",
                "INSERT INTO local_auth_entries (site_id, id_tag, status, created_at)"
                f" VALUES ('site_1', 'CARD-1', 'Accepted', {AT})",
            ):
                await connection.execute(text(statement))
        await schema.upgrade(store, "0033")
        async with store.engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO local_auth_entries (site_id, id_tag, parent_id_tag, id_token_type, status, created_at)"
                    f" VALUES ('site_1', '{TOKEN}', '{TOKEN}', 'eMAID', 'Accepted', {AT})"
                )
            )
            query = "SELECT id_tag, id_token_type FROM local_auth_entries ORDER BY id_tag"
            rows = [tuple(row) for row in (await connection.execute(text(query))).all()]
        assert rows == [("CARD-1", "ISO14443"), (TOKEN, "eMAID")]
        await schema.downgrade(store, "0032")
        async with store.engine.connect() as connection:
            count = "SELECT count(*) FROM local_auth_entries"
            assert (await connection.execute(text(count))).scalar_one() == 2
    finally:
        await store.dispose()
