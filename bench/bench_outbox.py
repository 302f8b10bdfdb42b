"""Outbox publish rate: an event stored with its state change, against the bare insert of the same row.

The baseline writes the same envelope JSON into a table with no stream counter; the ratio shows what
ordered, gapless streams cost per event on the embedded SQLite store.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from sqlalchemy import Column, Integer, MetaData, Table, Text, insert

from bench.common import Result, rate_async
from chargenet.clock import SystemClock
from chargenet.domain.events import AuthorizePayload
from chargenet.outbox import Outbox
from chargenet.store import schema
from chargenet.store.db import Store

COUNT = 2000


async def _measure() -> list[Result]:
    with tempfile.TemporaryDirectory() as scratch:
        store = Store(f"sqlite+aiosqlite:///{Path(scratch) / 'bench.db'}")
        await schema.prepare_schema(store)
        plain = Table("plain_events", MetaData(), Column("id", Integer, primary_key=True), Column("body", Text))
        async with store.engine.begin() as connection:
            await connection.run_sync(plain.metadata.create_all)
        outbox = Outbox(SystemClock())
        payload = AuthorizePayload.model_validate({"stationId": "ST-1", "idTag": "TAG", "status": "Accepted"})

        async def publish() -> None:
            async with store.transaction() as session:
                await outbox.publish(session, site_id="site_1", payload=payload)

        async def bare_insert() -> None:
            async with store.transaction() as session:
                await session.execute(insert(plain).values(body=payload.model_dump_json()))

        baseline = await rate_async(COUNT, bare_insert)
        ours = await rate_async(COUNT, publish)
        await store.dispose()
    return [Result("outbox publish (one event per transaction, SQLite)", ours, baseline, "events/s")]


def run() -> list[Result]:
    return asyncio.run(_measure())
