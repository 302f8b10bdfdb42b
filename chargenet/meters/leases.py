"""The bus leases in the store: take, renew and release them, and fence a session write by its bus's lease.

The rules are in `lease.py`; these functions persist them. On PostgreSQL a lease round locks this process's own
leases in key order (waiting for its own session writes, which hold them shared), then the others with
`FOR UPDATE SKIP LOCKED` (a row another process is renewing or writing under is theirs anyway). Every session
write of the meter shell first reads its bus's lease `FOR SHARE` in the same transaction and writes nothing if the
lease is no longer this process's, so a process that lost a bus (paused past the expiry, or presumed dead) cannot
start or stop a session on top of the new holder. SQLite means a single process: every bus is trivially held and
the table is not touched.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.meters.lease import BusLease, LeaseDecision, decide, expires_at
from chargenet.store.db import Store
from chargenet.store.models import MeterBusLease


class BusLeases:
    def __init__(self, store: Store, owner: str) -> None:
        self._store = store
        self.owner = owner
        self.shared = store.dialect == "postgresql"

    async def hold(self, bus_keys: set[str], now: datetime) -> dict[str, LeaseDecision]:
        """One lease round over the buses this process is configured with: renew ours, take the free and expired
        ones, give up ours on buses no longer configured. Returns the buses held, each RENEW or TAKE."""
        if not self.shared:
            return dict.fromkeys(bus_keys, LeaseDecision.RENEW)
        async with self._store.transaction() as session:
            if bus_keys:
                await session.execute(
                    pg_insert(MeterBusLease)
                    .values([{"bus_key": key} for key in sorted(bus_keys)])
                    .on_conflict_do_nothing(index_elements=[MeterBusLease.bus_key])
                )
            columns = (MeterBusLease.bus_key, MeterBusLease.owner, MeterBusLease.expires_at)
            ours = (
                await session.execute(
                    select(*columns)
                    .where(MeterBusLease.owner == self.owner)
                    .order_by(MeterBusLease.bus_key)
                    .with_for_update()
                )
            ).all()
            others = (
                await session.execute(
                    select(*columns)
                    .where(
                        MeterBusLease.bus_key.in_(sorted(bus_keys)),
                        or_(MeterBusLease.owner.is_(None), MeterBusLease.owner != self.owner),
                    )
                    .order_by(MeterBusLease.bus_key)
                    .with_for_update(skip_locked=True)
                )
            ).all()
            decisions: dict[str, LeaseDecision] = {}
            for key, owner, expiry in [*ours, *others]:
                if key not in bus_keys:
                    continue
                decision = decide(BusLease(key, owner, expiry), self.owner, now)
                if decision is not LeaseDecision.LEAVE:
                    decisions[key] = decision
            if decisions:
                await session.execute(
                    update(MeterBusLease)
                    .where(MeterBusLease.bus_key.in_(sorted(decisions)))
                    .values(owner=self.owner, expires_at=expires_at(now))
                )
            await session.execute(
                update(MeterBusLease)
                .where(MeterBusLease.owner == self.owner, MeterBusLease.bus_key.not_in(sorted(bus_keys)))
                .values(owner=None, expires_at=None)
            )
        return decisions

    async def release(self) -> None:
        """Give up every lease of this process (on shutdown), so another takes its buses at once."""
        if not self.shared:
            return
        async with self._store.transaction() as session:
            await session.execute(
                update(MeterBusLease).where(MeterBusLease.owner == self.owner).values(owner=None, expires_at=None)
            )

    async def still_held(self, session: AsyncSession, bus_key: str) -> bool:
        """In the caller's transaction: is `bus_key` still ours? Holds the lease row shared until it commits."""
        if not self.shared:
            return True
        held = await session.scalar(
            select(MeterBusLease.bus_key)
            .where(MeterBusLease.bus_key == bus_key, MeterBusLease.owner == self.owner)
            .with_for_update(read=True)
        )
        return held is not None
