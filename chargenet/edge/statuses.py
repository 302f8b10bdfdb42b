"""StatusNotification at speed: decided in memory against the connector's last known status, written in bulk.

StatusNotification is the message stations send most after Heartbeat, and each one is recorded (history), may
move the connector's current status, and may raise an event. The station link keeps its connectors' last known
status in memory (loaded from the store the first time a connector reports; one process owns a station's
connection at a time), decides with `protocol.status.assess`, and hands the result to the group committer,
which writes a whole batch with multi-row statements in the same transaction as its events.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.connectors import KnownStatus
from chargenet.domain.events import ChargePointErrorCode, ChargePointStatusPayload, ConnectorStatus
from chargenet.domain.tenants import MAX_CONNECTORS_PER_CHARGE_POINT, ConnectorAddress
from chargenet.edge.committer import BulkHandler
from chargenet.errors import InvalidInput
from chargenet.outbox import Outbox
from chargenet.store.models import Connector, ConnectorStatusHistory


@dataclass(frozen=True, slots=True)
class LoadedConnector:
    exists: bool
    last: KnownStatus | None


async def load_connector(session: AsyncSession, address: ConnectorAddress, ocpp_connector_id: int) -> LoadedConnector:
    row = await session.scalar(
        select(Connector).where(
            Connector.charge_point_id == address.charge_point_id, Connector.connector_id == address.connector_id
        )
    )
    if row is None:
        if address.connector_id > MAX_CONNECTORS_PER_CHARGE_POINT:
            raise InvalidInput(f"{ocpp_connector_id} is above the connector limit", field="connectorId")
        return LoadedConnector(exists=False, last=None)
    if row.status is None or row.status_at is None:
        return LoadedConnector(exists=True, last=None)
    last = KnownStatus(
        ConnectorStatus(row.status), ChargePointErrorCode(row.error_code or "NoError"), row.info, row.status_at
    )
    return LoadedConnector(exists=True, last=last)


@dataclass(frozen=True, slots=True)
class StatusWrite:
    site_id: str
    address: ConnectorAddress
    reported: KnownStatus
    received_at: datetime
    transition: str
    expected: bool
    becomes_current: bool
    create_connector: bool
    event: ChargePointStatusPayload | None


def bulk_writer(outbox: Outbox) -> BulkHandler:
    async def write(session: AsyncSession, items: list[StatusWrite]) -> None:
        await session.execute(
            insert(ConnectorStatusHistory),
            [
                {
                    "charge_point_id": w.address.charge_point_id,
                    "connector_id": w.address.connector_id,
                    "status": w.reported.status.value,
                    "error_code": w.reported.error_code.value,
                    "info": w.reported.info,
                    "reported_at": w.reported.timestamp,
                    "received_at": w.received_at,
                    "transition": w.transition,
                    "expected": w.expected,
                    "became_current": w.becomes_current,
                }
                for w in items
            ],
        )
        created = {(w.address.charge_point_id, w.address.connector_id) for w in items if w.create_connector}
        if created:
            await session.execute(
                insert(Connector), [{"charge_point_id": cp, "connector_id": c} for cp, c in sorted(created)]
            )
        # The last report of a connector in the batch that became current wins: the link decided them in order.
        current: dict[tuple[str, int], StatusWrite] = {}
        for w in items:
            if w.becomes_current:
                current[(w.address.charge_point_id, w.address.connector_id)] = w
        rows = [
            {
                "charge_point_id": cp,
                "connector_id": c,
                "status": w.reported.status.value,
                "error_code": w.reported.error_code.value,
                "info": w.reported.info,
                "status_at": w.reported.timestamp,
                "updated_at": w.received_at,
            }
            for (cp, c), w in current.items()
        ]
        if rows:
            await session.execute(update(Connector), rows)
        events = [(w.site_id, w.event) for w in items if w.event is not None]
        if events:
            await outbox.publish_many(session, events)

    return write
