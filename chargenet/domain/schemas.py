"""JSON Schemas (draft 2020-12) of the webhook events, generated from the models, for partners.

The generated documents are checked into docs/schemas/ and a test keeps them equal to what the models say.
Optional fields are written as absent-or-typed (never nullable), as the wire contract is.
"""

from __future__ import annotations

import json
from typing import Any

from chargenet.domain.events import DOCUMENTED_EVENTS, EventType

SCHEMA_BASE = "urn:chargenet:webhooks"

_DESCRIPTIONS = {
    "eventId": "Unique identifier of the event (UUID); partners de-duplicate by it.",
    "eventType": "The event type; it decides the shape of payload.",
    "siteId": "Identifier of the site where the station is located.",
    "timestamp": "When the event was raised, ISO 8601 in Europe/Brussels with a numeric offset; "
    "the same on every retry.",
    "payload": "Event-specific content.",
    "stationId": "Station (OCPP endpoint) that reported or processed it.",
    "chargePointId": "Charge point concerned.",
    "connectorId": "Connector on the charge point (0 is the whole charge point).",
    "idTag": "Identification tag presented by the driver, or the meter's tag for meter sessions.",
    "status": "Outcome or new status; see the enum.",
    "errorCode": "Error code reported by the charge point.",
    "info": "Free-form additional information from the station.",
    "meterStart": "Meter reading in kWh at transaction start (at most 3 decimals).",
    "meterStop": "Meter reading in kWh at transaction end (at most 3 decimals).",
    "transactionId": "Transaction identifier given by the edge, unique across the service.",
    "reservationId": "Reservation the transaction fulfils, when there was one.",
    "requestId": "The session request of POST /sessions this transaction follows, when it was started over the API.",
    "reason": "Why the transaction stopped; Local when the station did not say.",
    "idTokenType": "OCPP 2.0.1 stations: the type of the driver's idToken (ISO14443, eMAID, ...).",
    "stationStatus": "OCPP 2.0.1 stations: the station's own authorization status, when it is not one of status's.",
    "stationTransactionId": "OCPP 2.0.1 stations: the station's own id for the transaction.",
    "stationReason": "OCPP 2.0.1 stations: the station's own stop reason, when it is not one of reason's.",
    "webhookId": "The webhook this test event was sent to.",
    "requestedBy": "Who asked for the test event (an operator, an application or the command line).",
}


def event_json_schema(event_type: EventType | str) -> dict[str, Any]:
    """The schema of one documented envelope (an EventType, or `WebhookTest`)."""
    name = str(event_type)
    model = DOCUMENTED_EVENTS[name]
    schema = model.model_json_schema(mode="validation")
    _tidy(schema)
    properties = schema["properties"]
    properties["eventId"].update({"format": "uuid"})
    properties["timestamp"].update(
        {"format": "date-time", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}:\d{2}$"}
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{SCHEMA_BASE}:{name}",
        **schema,
        "title": f"{name} webhook event",
    }


def _tidy(node: Any) -> None:
    """Drop pydantic's null branches and defaults for optional fields, and its generated titles."""
    if isinstance(node, dict):
        if "anyOf" in node:
            branches = [b for b in node["anyOf"] if b != {"type": "null"}]
            if len(branches) == 1:
                del node["anyOf"]
                node.update(branches[0])
        if node.get("default", 1) is None:
            del node["default"]
        properties = node.get("properties")
        if isinstance(properties, dict):
            for name, prop in properties.items():
                if isinstance(prop, dict):
                    prop.pop("title", None)
                    if name in _DESCRIPTIONS and "$ref" not in prop:
                        prop["description"] = _DESCRIPTIONS[name]
        for value in node.values():
            _tidy(value)
    elif isinstance(node, list):
        for item in node:
            _tidy(item)


def render(event_type: EventType | str) -> str:
    return json.dumps(event_json_schema(event_type), indent=2, sort_keys=False) + "\n"
