"""Background workers as `run_once` plus a loop (after Prefect's LoopService): tests call `run_once`
with a ManualClock; the app runs `run` until it is asked to stop, and a stop never interrupts `run_once`
halfway (each iteration is one database transaction, so nothing is left half done)."""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from datetime import datetime
from typing import TYPE_CHECKING

from chargenet.clock import Clock

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from chargenet.store.db import Store

log = logging.getLogger(__name__)


class LoopWorker(ABC):
    name: str = "worker"

    def __init__(self, clock: Clock, interval: float) -> None:
        self.clock = clock
        self.interval = interval

    @abstractmethod
    async def run_once(self) -> None: ...

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            try:
                await self.run_once()
            except Exception:
                log.exception("worker iteration failed", extra={"fields": {"worker": self.name}})
            await self.pause(stopping)

    async def pause(self, stopping: asyncio.Event) -> None:
        """Between two iterations: `interval` on the clock, or less when the process is stopping. A worker
        that can be told of news overrides this to wake on it as well."""
        sleeper = asyncio.ensure_future(self.clock.sleep(self.interval))
        stopper = asyncio.ensure_future(stopping.wait())
        await asyncio.wait({sleeper, stopper}, return_when=asyncio.FIRST_COMPLETED)
        for task in (sleeper, stopper):
            task.cancel()


class RetentionWorker(LoopWorker):
    """Hourly by default, one unit of work that deletes what is past its retention (`purge`, which says how many
    rows went); logged when anything did."""

    what = "records"  # the log's name for what goes, e.g. "old audit records"

    def __init__(self, store: Store, clock: Clock, interval: float = 3600) -> None:
        super().__init__(clock, interval)
        self.store = store

    @abstractmethod
    async def purge(self, session: AsyncSession, now: datetime) -> int: ...

    async def run_once(self) -> None:
        async with self.store.transaction() as session:
            purged = await self.purge(session, self.clock.now())
        if purged:
            log.info(f"purged {self.what}", extra={"fields": {"count": purged, "worker": self.name}})
