"""Recording a connector status reported by a station, and raising its ChargePointStatus event."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.connectors import KnownStatus, StatusDecision, decide_status
from chargenet.domain.events import (
    ChargePointErrorCode,
    ChargePointStatusEvent,
    ChargePointStatusPayload,
    ConnectorStatus,
)
from chargenet.domain.tenants import MAX_CONNECTORS_PER_CHARGE_POINT, locate_connector
from chargenet.errors import InvalidInput, NotFound
from chargenet.outbox import Outbox
from chargenet.services.stations import layout_of
from chargenet.store.models import Connector, Station


@dataclass(frozen=True, slots=True)
class StatusOutcome:
    decision: StatusDecision
    event: ChargePointStatusEvent | None


async def record_status(
    session: AsyncSession,
    outbox: Outbox,
    *,
    station_id: str,
    ocpp_connector_id: int,
    status: ConnectorStatus,
    error_code: ChargePointErrorCode,
    timestamp: datetime,
    now: datetime,
    info: str | None = None,
) -> StatusOutcome:
    """Store the status and, when it changed, publish ChargePointStatus in the same transaction."""
    station = await session.get(Station, station_id)
    if station is None:
        raise NotFound("station", station_id)
    address = locate_connector(layout_of(station), ocpp_connector_id)
    row = await session.scalar(
        select(Connector)
        .where(Connector.charge_point_id == address.charge_point_id, Connector.connector_id == address.connector_id)
        .with_for_update()
    )
    if row is None:
        if address.connector_id > MAX_CONNECTORS_PER_CHARGE_POINT:
            raise InvalidInput(f"{ocpp_connector_id} is above the connector limit", field="connectorId")
        row = Connector(charge_point_id=address.charge_point_id, connector_id=address.connector_id)
        session.add(row)
    last = None
    if row.status is not None and row.status_at is not None:
        last = KnownStatus(
            ConnectorStatus(row.status), ChargePointErrorCode(row.error_code or "NoError"), row.info, row.status_at
        )
    reported = KnownStatus(status, error_code, info, timestamp)
    decision = decide_status(last, reported)
    if decision.becomes_current:
        row.status, row.error_code, row.info, row.status_at = status.value, error_code.value, info, timestamp
    row.updated_at = now
    await session.flush()
    event = None
    if decision.raises_event:
        payload = ChargePointStatusPayload(
            stationId=station_id,
            chargePointId=address.charge_point_id,
            connectorId=address.connector_id,
            status=status,
            errorCode=error_code,
            **({"info": info} if info else {}),
        )
        published = await outbox.publish(session, site_id=station.site_id, payload=payload)
        assert isinstance(published, ChargePointStatusEvent)
        event = published
    return StatusOutcome(decision, event)
