"""All tables, one module per area.

A name asked of this package imports the module that defines it and no other area's: a command that lists
companies builds the mapped classes of the tenants and the audit log, not the 30-odd others (their classes cost
about as much to build as SQLAlchemy costs to import; docs/performance.md). `Base` is the exception: asking the
package for it imports every area first, so `Base.metadata` holds every table (Alembic reads it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chargenet.store.models.alerts import Alert, AlertMail, AlertRule, MailSettings
    from chargenet.store.models.applications import (
        Application,
        Group,
        GroupMember,
        RateLimitBucket,
        RevokedToken,
        UsedAssertion,
    )
    from chargenet.store.models.audit import AuditRecord
    from chargenet.store.models.base import Base, UtcDateTime
    from chargenet.store.models.certificates import StationCertificate
    from chargenet.store.models.edge import (
        AuthCacheEntry,
        ConnectorStatusHistory,
        EdgeTransaction,
        LocalAuthEntry,
        OcppMessage,
        StationCommand,
        StationNotice,
        StationPresence,
        UnknownStop,
        UnstartedTransaction,
        UpstreamMessage,
    )
    from chargenet.store.models.events import EventStream, OutboxCursor, OutboxEvent
    from chargenet.store.models.meta import DirectoryVersion, StoreSetting
    from chargenet.store.models.meters import Meter, MeterBusLease, MeterPollHealth, MeterSession, MeterState
    from chargenet.store.models.operators import Operator, OperatorSession
    from chargenet.store.models.power import (
        Circuit,
        GridMeter,
        GridMeterReading,
        PowerAllowance,
        PowerLease,
        SitePowerSample,
        StationCircuit,
        StationProfileAnswer,
        UpstreamChargingProfile,
    )
    from chargenet.store.models.samples import MeterSample
    from chargenet.store.models.sequences import IdSequence
    from chargenet.store.models.session_requests import SessionRequest
    from chargenet.store.models.station_logs import LogUploadSlot, StationLog
    from chargenet.store.models.tenants import ChargePoint, Company, Connector, Site, Station
    from chargenet.store.models.webhooks import (
        Webhook,
        WebhookDeadLetter,
        WebhookDelivery,
        WebhookLane,
        WebhookLaneEntry,
    )
else:
    # name -> the module of this package that defines it (tests/unit/store/test_models.py holds it to __all__)
    _MODULES = {
        "Alert": "alerts",
        "AlertMail": "alerts",
        "AlertRule": "alerts",
        "Application": "applications",
        "AuditRecord": "audit",
        "AuthCacheEntry": "edge",
        "Base": "base",
        "ChargePoint": "tenants",
        "Circuit": "power",
        "Company": "tenants",
        "Connector": "tenants",
        "ConnectorStatusHistory": "edge",
        "DirectoryVersion": "meta",
        "EdgeTransaction": "edge",
        "EventStream": "events",
        "GridMeter": "power",
        "GridMeterReading": "power",
        "Group": "applications",
        "GroupMember": "applications",
        "IdSequence": "sequences",
        "LocalAuthEntry": "edge",
        "LogUploadSlot": "station_logs",
        "MailSettings": "alerts",
        "Meter": "meters",
        "MeterBusLease": "meters",
        "MeterPollHealth": "meters",
        "MeterSample": "samples",
        "MeterSession": "meters",
        "MeterState": "meters",
        "OcppMessage": "edge",
        "Operator": "operators",
        "OperatorSession": "operators",
        "OutboxCursor": "events",
        "OutboxEvent": "events",
        "PowerAllowance": "power",
        "PowerLease": "power",
        "SitePowerSample": "power",
        "RateLimitBucket": "applications",
        "RevokedToken": "applications",
        "SessionRequest": "session_requests",
        "Site": "tenants",
        "Station": "tenants",
        "StationCertificate": "certificates",
        "StationCircuit": "power",
        "StationCommand": "edge",
        "StationLog": "station_logs",
        "StationNotice": "edge",
        "StationProfileAnswer": "power",
        "StationPresence": "edge",
        "StoreSetting": "meta",
        "UnknownStop": "edge",
        "UnstartedTransaction": "edge",
        "UpstreamChargingProfile": "power",
        "UpstreamMessage": "edge",
        "UsedAssertion": "applications",
        "UtcDateTime": "base",
        "Webhook": "webhooks",
        "WebhookDeadLetter": "webhooks",
        "WebhookDelivery": "webhooks",
        "WebhookLane": "webhooks",
        "WebhookLaneEntry": "webhooks",
    }

    def __getattr__(name: str) -> Any:
        if name == "Base":
            for module in sorted(set(_MODULES.values())):
                importlib.import_module(f"{__name__}.{module}")
        if name not in _MODULES:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
        globals()[name] = value
        return value


__all__ = [
    "Alert",
    "AlertMail",
    "AlertRule",
    "Application",
    "AuditRecord",
    "AuthCacheEntry",
    "Base",
    "ChargePoint",
    "Circuit",
    "Company",
    "Connector",
    "ConnectorStatusHistory",
    "DirectoryVersion",
    "EdgeTransaction",
    "EventStream",
    "GridMeter",
    "GridMeterReading",
    "Group",
    "GroupMember",
    "IdSequence",
    "LocalAuthEntry",
    "LogUploadSlot",
    "MailSettings",
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
    "PowerAllowance",
    "PowerLease",
    "RateLimitBucket",
    "RevokedToken",
    "SessionRequest",
    "Site",
    "SitePowerSample",
    "Station",
    "StationCertificate",
    "StationCircuit",
    "StationCommand",
    "StationLog",
    "StationNotice",
    "StationPresence",
    "StationProfileAnswer",
    "StoreSetting",
    "UnknownStop",
    "UnstartedTransaction",
    "UpstreamChargingProfile",
    "UpstreamMessage",
    "UsedAssertion",
    "UtcDateTime",
    "Webhook",
    "WebhookDeadLetter",
    "WebhookDelivery",
    "WebhookLane",
    "WebhookLaneEntry",
]
