"""All tables. Importing this package registers every model on `Base.metadata` (Alembic reads it)."""

from chargenet.store.models.applications import Application, Group, GroupMember
from chargenet.store.models.base import Base, UtcDateTime
from chargenet.store.models.edge import (
    AuthCacheEntry,
    ConnectorStatusHistory,
    EdgeTransaction,
    LocalAuthEntry,
    OcppMessage,
    StationCommand,
    StationPresence,
    UnknownStop,
    UpstreamMessage,
)
from chargenet.store.models.events import EventStream, OutboxCursor, OutboxEvent
from chargenet.store.models.meta import DirectoryVersion, StoreSetting
from chargenet.store.models.meters import Meter, MeterBusLease, MeterPollHealth, MeterSession, MeterState
from chargenet.store.models.operators import AuditRecord, Operator, OperatorSession
from chargenet.store.models.samples import MeterSample
from chargenet.store.models.sequences import IdSequence
from chargenet.store.models.tenants import ChargePoint, Company, Connector, Site, Station
from chargenet.store.models.webhooks import (
    Webhook,
    WebhookDeadLetter,
    WebhookDelivery,
    WebhookLane,
    WebhookLaneEntry,
)

__all__ = [
    "Application",
    "AuditRecord",
    "AuthCacheEntry",
    "Base",
    "ChargePoint",
    "Company",
    "Connector",
    "ConnectorStatusHistory",
    "DirectoryVersion",
    "EdgeTransaction",
    "EventStream",
    "Group",
    "GroupMember",
    "IdSequence",
    "LocalAuthEntry",
    "Meter",
    "MeterBusLease",
    "MeterPollHealth",
    "MeterSample",
    "MeterSession",
    "MeterState",
    "OcppMessage",
    "Operator",
    "OperatorSession",
    "OutboxCursor",
    "OutboxEvent",
    "Site",
    "Station",
    "StationCommand",
    "StationPresence",
    "StoreSetting",
    "UnknownStop",
    "UpstreamMessage",
    "UtcDateTime",
    "Webhook",
    "WebhookDeadLetter",
    "WebhookDelivery",
    "WebhookLane",
    "WebhookLaneEntry",
]
