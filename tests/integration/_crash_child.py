"""Child process for the crash tests: records a status change, reports where it is, then waits to be killed."""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime

from chargenet.clock import SystemClock
from chargenet.domain.events import ChargePointErrorCode, ConnectorStatus
from chargenet.edge.statuses import record_status
from chargenet.outbox import Outbox
from chargenet.store.db import Store


async def main(database_url: str, keys_dir: str, stop_at: str) -> None:
    store = Store(database_url)
    async with store.transaction() as session:
        await record_status(
            session,
            Outbox(SystemClock()),
            station_id="ST-1",
            ocpp_connector_id=1,
            status=ConnectorStatus.CHARGING,
            error_code=ChargePointErrorCode.NO_ERROR,
            timestamp=datetime.now(UTC),
            now=datetime.now(UTC),
        )
        if stop_at == "before-commit":
            print("READY", flush=True)
            await asyncio.Event().wait()  # inside the transaction, until SIGKILL
    print("READY", flush=True)
    await asyncio.Event().wait()  # committed, until SIGKILL


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
