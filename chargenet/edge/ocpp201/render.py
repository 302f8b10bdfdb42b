"""The core's answers in OCPP 2.0.1's words: what a 2.0.1 station is sent back.

These are the edge's own answers: the ones a station gets without an upstream, while its upstream is away, or
when the site's upstream does not take 2.0.1 (docs/edge.md, "OCPP 2.0.1 stations").
"""

from __future__ import annotations

from datetime import datetime

from chargenet.edge.core.authorize import AuthDecision
from chargenet.edge.ocpp16.frames import Payload
from chargenet.edge.ocpp16.proxy import HEARTBEAT_INTERVAL, ocpp_time

# The station actions whose handling comes with later work (ISO 15118 certificates, charging limits with site
# power): answered `NotSupported` by the edge, forwarded to a connected 2.0.1 upstream (decisions.md §5).
NOT_SUPPORTED = frozenset(
    {
        "Get15118EVCertificate",
        "GetCertificateStatus",
        "NotifyChargingLimit",
        "ClearedChargingLimit",
        "ReportChargingProfiles",
        "NotifyCustomerInformation",
        "NotifyDisplayMessages",
        "NotifyEVChargingNeeds",
        "NotifyEVChargingSchedule",
        "NotifyMonitoringReport",
        "PublishFirmwareStatusNotification",
    }
)


def id_token_info(decision: AuthDecision) -> Payload:
    """An IdTokenInfo: the expiry a station gets is one an upstream or the local list gave."""
    info: Payload = {"status": decision.status.value}
    if decision.expires_at is not None:
        info["cacheExpiryDateTime"] = ocpp_time(decision.expires_at)
    if decision.parent_id_tag is not None:
        info["groupIdToken"] = {"idToken": decision.parent_id_tag, "type": "Central"}
    return info


def local_answer(action: str, now: datetime) -> Payload:
    """The edge's answer to a station CALL that carries no decision."""
    if action == "BootNotification":
        return {"status": "Accepted", "currentTime": ocpp_time(now), "interval": HEARTBEAT_INTERVAL}
    if action == "Heartbeat":
        return {"currentTime": ocpp_time(now)}
    if action == "DataTransfer":
        return {"status": "UnknownVendorId"}  # no vendor extension lives in the edge
    return {}
