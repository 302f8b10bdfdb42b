"""When a reported connector status raises a ChargePointStatus event (service.md §6 rule 2, decisions.md §3-4).

Rule 1: the very first status of a connector raises an event.
Rule 2: a status raises an event only when the `status` value differs from the last known one; a new
        errorCode or info under the same status is recorded, silently.
Rule 3: a status older (by the station's timestamp) than the last known one is history: recorded, no event,
        and it does not replace the last known status.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chargenet.domain.events import ChargePointErrorCode, ConnectorStatus


@dataclass(frozen=True, slots=True)
class KnownStatus:
    status: ConnectorStatus
    error_code: ChargePointErrorCode
    info: str | None
    timestamp: datetime


@dataclass(frozen=True, slots=True)
class StatusDecision:
    becomes_current: bool
    raises_event: bool


def decide_status(last: KnownStatus | None, reported: KnownStatus) -> StatusDecision:
    if last is None:
        return StatusDecision(becomes_current=True, raises_event=True)
    if reported.timestamp < last.timestamp:
        return StatusDecision(becomes_current=False, raises_event=False)
    return StatusDecision(becomes_current=True, raises_event=reported.status != last.status)
