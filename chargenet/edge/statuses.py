"""StatusNotification at speed: decided in memory against the connector's last known status, written in bulk.

StatusNotification is the message stations send most after Heartbeat, and each one is recorded (history), may
move the connector's current status, and may raise an event. The station link keeps its connectors' last known
status in memory (loaded from the store the first time a connector reports; one process owns a station's
connection at a time), decides with `core.status.assess`, and hands the result to the group committer,
which writes a whole batch with multi-row statements in the same transaction as its events, and notifies
`store.notify.CONNECTOR_STATUS` in it (once a commit, however many batches or reports it holds), which wakes the
console's live feeds of the other processes sharing a PostgreSQL store.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Connection, Table, bindparam, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.connectors import KnownStatus
from chargenet.domain.events import ChargePointErrorCode, ChargePointStatusPayload, ConnectorStatus, Event
from chargenet.domain.tenants import MAX_CONNECTORS_PER_CHARGE_POINT, ConnectorAddress, locate_connector
from chargenet.edge.committer import BulkHandler
from chargenet.edge.core.status import StatusAssessment, assess
from chargenet.errors import InvalidInput, NotFound
from chargenet.outbox import Outbox
from chargenet.store.models import Connector, ConnectorStatusHistory, Station
from chargenet.store.models.tenants import CONNECTOR_STATUS_COLUMNS
from chargenet.store.notify import CONNECTOR_STATUS, notify


@dataclass(frozen=True, slots=True)
class LoadedConnector:
    exists: bool
    last: KnownStatus | None


_CONNECTOR = select(Connector.status, Connector.error_code, Connector.info, Connector.status_at).where(
    Connector.charge_point_id == bindparam("charge_point_id"), Connector.connector_id == bindparam("connector_id")
)


_CONNECTORS_OF = select(*CONNECTOR_STATUS_COLUMNS).where(
    Connector.charge_point_id.in_(bindparam("charge_point_ids", expanding=True))
)

ConnectorRow = tuple[str | None, str | None, str | None, datetime | None]  # status, error code, info, status at


def load_connector(connection: Connection, address: ConnectorAddress, ocpp_connector_id: int) -> LoadedConnector:
    """A connector's last known status, read once per connection (run by `Store.read_statement`, so a station's
    first StatusNotification does not queue behind the store's writers; the link keeps it from then on)."""
    row = connection.execute(
        _CONNECTOR, {"charge_point_id": address.charge_point_id, "connector_id": address.connector_id}
    ).first()
    return loaded_from(None if row is None else cast(ConnectorRow, tuple(row)), address, ocpp_connector_id)


def load_connectors(connection: Connection, charge_point_ids: list[str]) -> dict[tuple[str, int], ConnectorRow]:
    """The status columns of every connector of `charge_point_ids`, by (charge point id, connector id): the first
    reads of many links in one statement (`edge.connector_reads`)."""
    rows = connection.execute(_CONNECTORS_OF, {"charge_point_ids": charge_point_ids})
    return {(cp, c): (status, error_code, info, status_at) for cp, c, status, error_code, info, status_at in rows}


def loaded_from(row: ConnectorRow | None, address: ConnectorAddress, ocpp_connector_id: int) -> LoadedConnector:
    """What a link keeps of a connector from its row (None: the connector has no row yet). Raises `InvalidInput`
    for a connector that has none and may not be created, being above the limit."""
    if row is None:
        if address.connector_id > MAX_CONNECTORS_PER_CHARGE_POINT:
            raise InvalidInput(f"{ocpp_connector_id} is above the connector limit", field="connectorId")
        return LoadedConnector(exists=False, last=None)
    status, error_code, info, status_at = row
    if status is None or status_at is None:
        return LoadedConnector(exists=True, last=None)
    last = KnownStatus(ConnectorStatus(status), ChargePointErrorCode(error_code or "NoError"), info, status_at)
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


@dataclass(frozen=True, slots=True)
class StatusOutcome:
    write: StatusWrite
    assessment: StatusAssessment
    event: Event | None


def decide(
    station_id: str,
    site_id: str,
    address: ConnectorAddress,
    loaded: LoadedConnector,
    reported: KnownStatus,
    now: datetime,
) -> tuple[StatusWrite, StatusAssessment]:
    """What to write for a reported status, against the connector's last known one (no I/O)."""
    assessment = assess(address.connector_id, loaded.last, reported)
    event = None
    if assessment.decision.raises_event:
        event = ChargePointStatusPayload(
            stationId=station_id,
            chargePointId=address.charge_point_id,
            connectorId=address.connector_id,
            status=reported.status,
            errorCode=reported.error_code,
            **({"info": reported.info} if reported.info else {}),
        )
    write = StatusWrite(
        site_id=site_id,
        address=address,
        reported=reported,
        received_at=now,
        transition=assessment.transition,
        expected=assessment.expected,
        becomes_current=assessment.decision.becomes_current,
        create_connector=not loaded.exists,
        event=event,
    )
    return write, assessment


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
    """One status report, decided and written in the caller's transaction by the same code as the edge's batches
    (for a process that holds no station link, and for tests); the write says whether it raised an event."""
    station = await session.get(Station, station_id)
    if station is None:
        raise NotFound("station", station_id)
    address = locate_connector(station.layout(), ocpp_connector_id)
    loaded = await session.run_sync(lambda sync: load_connector(sync.connection(), address, ocpp_connector_id))
    reported = KnownStatus(status, error_code, info, timestamp)
    write, assessment = decide(station_id, station.site_id, address, loaded, reported, now)
    published = await write_statuses(session, outbox, [write])
    return StatusOutcome(write, assessment, published[0] if published else None)


def bulk_writer(outbox: Outbox) -> BulkHandler:
    """The group committer's handler: `write_statuses` for a batch."""

    async def write(session: AsyncSession, items: list[StatusWrite]) -> None:
        await write_statuses(session, outbox, items)

    return write


# Core statements on the tables, built once: the ORM's bulk forms of the same statements cost a tenth of the event
# loop's time under a flood of StatusNotifications, for nothing the batch needs (no objects come back).
_connectors = cast(Table, Connector.__table__)
_HISTORY = insert(cast(Table, ConnectorStatusHistory.__table__))
_NEW_CONNECTORS = insert(_connectors)
_CURRENT = (
    update(_connectors)
    .where(
        _connectors.c.charge_point_id == bindparam("b_charge_point_id"),
        _connectors.c.connector_id == bindparam("b_connector_id"),
    )
    .values(
        status=bindparam("b_status"),
        error_code=bindparam("b_error_code"),
        info=bindparam("b_info"),
        status_at=bindparam("b_status_at"),
        updated_at=bindparam("b_updated_at"),
    )
)


async def write_statuses(session: AsyncSession, outbox: Outbox, items: list[StatusWrite]) -> list[Event]:
    """The one status writer: history, new connectors, current statuses and events of a batch, in multi-row
    statements in the caller's transaction; returns the events published."""

    await session.execute(
        _HISTORY,
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
            _NEW_CONNECTORS, [{"charge_point_id": cp, "connector_id": c} for cp, c in sorted(created)]
        )
    # The last report of a connector in the batch that became current wins: the link decided them in order.
    current: dict[tuple[str, int], StatusWrite] = {}
    for w in items:
        if w.becomes_current:
            current[(w.address.charge_point_id, w.address.connector_id)] = w
    rows = [
        {
            "b_charge_point_id": cp,
            "b_connector_id": c,
            "b_status": w.reported.status.value,
            "b_error_code": w.reported.error_code.value,
            "b_info": w.reported.info,
            "b_status_at": w.reported.timestamp,
            "b_updated_at": w.received_at,
        }
        for (cp, c), w in current.items()
    ]
    if rows:
        await session.execute(_CURRENT, rows)
    # Also what raises no event (a new error code under the same status), which the feeds show as well.
    notify(session, CONNECTOR_STATUS)
    events = [(w.site_id, w.event) for w in items if w.event is not None]
    return await outbox.publish_many(session, events) if events else []
