"""OCPP 1.6 payloads read into the core's typed records. Each payload was validated against its schema first
(`frames.check_call`, `frames.check_result`), so the fields the schema requires are there with their types."""

from __future__ import annotations

from datetime import datetime

from chargenet.domain.connectors import KnownStatus
from chargenet.domain.events import AuthorizationStatus, ChargePointErrorCode, ConnectorStatus
from chargenet.domain.tenants import StationLayout, locate_connector
from chargenet.edge.core.authorize import UpstreamVerdict
from chargenet.edge.core.messages import (
    ConnectorRef,
    IdToken,
    MeterReport,
    StationBooted,
    StatusReport,
    TokenPresented,
    TransactionEnded,
    TransactionStarted,
)
from chargenet.edge.core.transactions import stop_reason
from chargenet.edge.ocpp16.frames import Payload


def upstream_verdict(id_tag_info: Payload) -> UpstreamVerdict:
    """An upstream's IdTagInfo (in its Authorize or StartTransaction answer)."""
    expiry = id_tag_info.get("expiryDate")
    return UpstreamVerdict(
        AuthorizationStatus(id_tag_info["status"]),
        datetime.fromisoformat(expiry) if expiry else None,
        id_tag_info.get("parentIdTag"),
    )


def connector(layout: StationLayout, connector_id: int) -> ConnectorRef:
    """Raises `InvalidInput` (PropertyConstraintViolation) for a connector the station cannot have."""
    return ConnectorRef(locate_connector(layout, connector_id), connector_id)


def station_booted(payload: Payload) -> StationBooted:
    """BootNotification."""
    return StationBooted(
        payload.get("chargePointVendor"), payload.get("chargePointModel"), payload.get("firmwareVersion")
    )


def status_report(layout: StationLayout, payload: Payload, now: datetime) -> StatusReport:
    """StatusNotification; a report without a timestamp is dated when it arrived."""
    timestamp = payload.get("timestamp")
    return StatusReport(
        connector(layout, payload["connectorId"]),
        KnownStatus(
            ConnectorStatus(payload["status"]),
            ChargePointErrorCode(payload["errorCode"]),
            payload.get("info"),
            datetime.fromisoformat(timestamp) if timestamp is not None else now,
        ),
    )


def token_presented(payload: Payload) -> TokenPresented:
    """Authorize."""
    return TokenPresented(IdToken(payload["idTag"]))


def transaction_started(layout: StationLayout, payload: Payload) -> TransactionStarted:
    """StartTransaction."""
    return TransactionStarted(
        connector(layout, payload["connectorId"]),
        IdToken(payload["idTag"]),
        datetime.fromisoformat(payload["timestamp"]),
        payload["meterStart"],
        payload.get("reservationId"),
    )


def transaction_ended(payload: Payload) -> TransactionEnded:
    """StopTransaction: a 1.6 station names the transaction by the edge's id; a missing reason is `Local`."""
    id_tag = payload.get("idTag")
    return TransactionEnded(
        payload["transactionId"],
        datetime.fromisoformat(payload["timestamp"]),
        payload["meterStop"],
        stop_reason(payload.get("reason")),
        IdToken(id_tag) if id_tag else None,
    )


def meter_report(layout: StationLayout, payload: Payload) -> MeterReport:
    """MeterValues."""
    return MeterReport(connector(layout, payload["connectorId"]), payload.get("transactionId"))
