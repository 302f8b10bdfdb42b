"""All tables. Importing this package registers every model on `Base.metadata` (Alembic reads it)."""

from chargenet.store.models.base import Base, UtcDateTime
from chargenet.store.models.events import EventStream, OutboxCursor, OutboxEvent
from chargenet.store.models.meta import StoreSetting
from chargenet.store.models.meters import Meter, MeterSession, MeterState
from chargenet.store.models.sequences import IdSequence
from chargenet.store.models.tenants import ChargePoint, Company, Connector, Site, Station

__all__ = [
    "Base",
    "ChargePoint",
    "Company",
    "Connector",
    "EventStream",
    "IdSequence",
    "Meter",
    "MeterSession",
    "MeterState",
    "OutboxCursor",
    "OutboxEvent",
    "Site",
    "Station",
    "StoreSetting",
    "UtcDateTime",
]
