"""What a central system may ask a station to send at once: OCPP 1.6's MessageTrigger, the `requestedMessage` of a
TriggerMessage. The API's bodies and the command line's choices offer this one list."""

from __future__ import annotations

from typing import Literal, get_args

MessageTrigger = Literal[
    "BootNotification",
    "DiagnosticsStatusNotification",
    "FirmwareStatusNotification",
    "Heartbeat",
    "MeterValues",
    "StatusNotification",
]
MESSAGE_TRIGGERS: tuple[str, ...] = get_args(MessageTrigger)
