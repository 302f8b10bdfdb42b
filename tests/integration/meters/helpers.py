from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.meters.modbus import ModbusLink
from chargenet.meters.runtime import LinkFactory, MeterPolling
from chargenet.outbox import Outbox
from chargenet.services import meters as meter_service
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import OutboxEvent
from tests.factories import Tenant


async def add_meter(store: Store, clock: ManualClock, tenant: Tenant, **options: Any) -> str:
    """A meter for the tenant's station, on the bus `options` name (`tcp=`, or `rtu=` and `baud=`): an SDM630 at
    unit 1 unless they say otherwise; its id."""
    spec = {"site_id": tenant.site_id, "station_id": tenant.station_id, "profile": "sdm630", "unit_id": 1, **options}
    async with store.transaction() as session:
        view = await meter_service.create_meter(session, OPERATOR, now=clock.now(), **spec)
    return view.id


async def start_polling(store: Store, clock: ManualClock, link_factory: LinkFactory = ModbusLink) -> MeterPolling:
    """A process's meter polling, with the buses the store configures."""
    polling = MeterPolling(store, Outbox(clock), clock, link_factory=link_factory)
    await polling.reload()
    return polling


def close(*processes: MeterPolling) -> None:
    """Close the links of every bus the processes poll."""
    for polling in processes:
        for poller in polling.pollers.values():
            poller.link.close()


async def poll(polling: MeterPolling, clock: ManualClock, seconds: float, *, interval: float = 5) -> None:
    """Run every bus's poll cycle each `interval` seconds of the manual clock, for `seconds`."""
    for _ in range(int(seconds / interval)):
        clock.advance(interval)
        for poller in polling.pollers.values():
            await poller.run_once()


async def events(store: Store) -> list[dict[str, Any]]:
    async with store.transaction() as session:
        rows = await session.scalars(select(OutboxEvent).order_by(OutboxEvent.position))
        return [json.loads(row.body) for row in rows]


async def payloads(store: Store) -> list[tuple[str, dict[str, Any]]]:
    return [(event["eventType"], event["payload"]) for event in await events(store)]
