"""Errors of the meter package, in the tree of chargenet.errors."""

from __future__ import annotations

from chargenet.errors import ChargenetError


class MeterError(ChargenetError):
    """Something about a meter failed."""


class MeterReplyInvalid(MeterError):
    """A meter answered, but not with the registers its profile expects."""


class MeterUnreachable(MeterError):
    """A meter did not answer a poll (timeout, CRC error, connection refused, exception response)."""

    def __init__(self, meter_id: str, message: str) -> None:
        super().__init__(f"meter {meter_id}: {message}")
        self.meter_id = meter_id
