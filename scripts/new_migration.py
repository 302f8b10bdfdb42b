"""Write a new Alembic migration by comparing the models with a scratch store at the current head.

Usage: python scripts/new_migration.py REV_ID "message"
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from alembic import command

from chargenet.store import schema
from chargenet.store.db import Store


async def main(rev_id: str, message: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        store = Store(f"sqlite+aiosqlite:///{Path(scratch) / 'scratch.db'}")
        await schema.upgrade(store)
        async with store.engine.begin() as connection:
            await connection.run_sync(
                lambda conn: command.revision(
                    schema.alembic_config(conn), message=message, autogenerate=True, rev_id=rev_id
                )
            )
        await store.dispose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
