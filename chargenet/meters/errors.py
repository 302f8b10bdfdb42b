"""Errors of the meter package, in the tree of chargenet.errors."""

from __future__ import annotations

from enum import StrEnum

from chargenet.errors import ChargenetError


class MeterError(ChargenetError):
    """Something about a meter failed."""


class MeterReplyInvalid(MeterError):
    """A meter answered, but not with the registers its profile expects."""


class ReadFailure(StrEnum):
    # No reply, or one pymodbus's framer dropped for another unit's id: both look exactly like silence.
    TIMEOUT = "timeout"
    CRC = "crc"  # an RTU reply whose CRC did not check (noise, termination, two meters talking at once)
    EXCEPTION = "exception"  # a Modbus exception response (illegal address, device failure)
    CONNECT = "connect"  # the TCP endpoint or serial device cannot be opened
    INVALID_REPLY = "invalid_reply"  # an answer that does not fit the profile


class MeterUnreachable(MeterError):
    """A meter did not answer a poll usefully; `failure` says how."""

    def __init__(self, meter_id: str, message: str, failure: ReadFailure = ReadFailure.TIMEOUT) -> None:
        super().__init__(f"meter {meter_id}: {message}")
        self.meter_id = meter_id
        self.failure = failure


class BusLeaseLost(MeterError):
    """This process no longer holds the lease of the bus a meter is on, so it must not write for that meter."""

    def __init__(self, meter_id: str, bus_key: str) -> None:
        super().__init__(f"meter {meter_id}: the lease of bus {bus_key} is held by another process")
        self.meter_id = meter_id
        self.bus_key = bus_key
