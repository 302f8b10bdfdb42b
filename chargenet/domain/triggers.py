"""What a central system may ask a station to send at once: the `requestedMessage` of a TriggerMessage, OCPP 1.6's
MessageTrigger and OCPP 2.0.1's MessageTriggerEnumType together. The API's bodies and the command line's choices
offer this one list; a name only one generation has is refused (422) for a station of the other
(`edge.ocpp201.commands`)."""

from __future__ import annotations

from typing import Literal, get_args

MessageTrigger = Literal[
    "BootNotification",
    "DiagnosticsStatusNotification",
    "FirmwareStatusNotification",
    "Heartbeat",
    "LogStatusNotification",
    "MeterValues",
    "PublishFirmwareStatusNotification",
    "SignChargingStationCertificate",
    "SignCombinedCertificate",
    "SignV2GCertificate",
    "StatusNotification",
    "TransactionEvent",
]
MESSAGE_TRIGGERS: tuple[str, ...] = get_args(MessageTrigger)
