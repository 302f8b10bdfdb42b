"""Bus timing and scheduling for meters that share one line: pure policy, no I/O.

Theory of operation. An RS-485 bus carries one request at a time, and so does a pymodbus client (it holds a lock
per request), so every meter behind one serial port or one TCP endpoint is polled in turn. Two things decide
how many meters a bus can serve: the wire time of each read (characters at the baud rate, two silent intervals,
the meter's turnaround; `SerialLine.read_time`) and the time lost to meters that do not answer. pymodbus's
defaults (3 s timeout, 3 retries) lose 12 s per request to a dead meter, so `BusSettings.for_serial` derives the
timeout from the wire time of the longest read plus a margin and uses no retries: a failed read costs one poll
of one meter, never a session (the detector ignores read failures), and the next cycle tries again.

`BusScheduler` keeps each meter on its own poll interval. A meter that failed `dead_after_failures` times in a
row is dead: it is probed with exponential backoff, and at most `max_dead_probes_per_cycle` dead meters are
probed per cycle, so a bus with dead meters loses at most one timeout per cycle to them and the live meters
keep their cadence.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from chargenet.errors import InvalidInput

MAX_REGISTERS_PER_READ = 125


BAUD_RATES = (1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200)


class Parity(StrEnum):
    NONE = "N"
    EVEN = "E"
    ODD = "O"


@dataclass(frozen=True, slots=True)
class SerialLine:
    """An RS-485 line's character format (8 data bits)."""

    baudrate: int = 9600
    parity: Parity = Parity.NONE
    stopbits: int = 1

    def __post_init__(self) -> None:
        if self.baudrate not in BAUD_RATES:
            raise InvalidInput(f"unsupported baud rate {self.baudrate}", field="baud")
        if self.stopbits not in (1, 2):
            raise InvalidInput("must be 1 or 2", field="stopbits")

    @property
    def bits_per_char(self) -> int:
        return 1 + 8 + (0 if self.parity is Parity.NONE else 1) + self.stopbits

    @property
    def char_time_s(self) -> float:
        return self.bits_per_char / self.baudrate

    @property
    def silent_interval_s(self) -> float:
        """t3.5: 3.5 characters up to 19200 baud, a fixed 1.75 ms above (Modbus over serial line, 2.5.1.1)."""
        return 3.5 * self.char_time_s if self.baudrate <= 19200 else 0.00175

    def frame_time(self, nbytes: int) -> float:
        return nbytes * self.char_time_s

    def read_time(self, registers: int, turnaround_s: float = 0.0) -> float:
        """One FC3/FC4 transaction: an 8-byte request, a 5 + 2n byte reply, two silent intervals, the turnaround."""
        return self.frame_time(8) + self.frame_time(5 + 2 * registers) + 2 * self.silent_interval_s + turnaround_s

    def reply_time(self, registers: int) -> float:
        """The wire time of a reply frame alone (what a simulated meter delays its reply by)."""
        return self.frame_time(5 + 2 * registers) + self.silent_interval_s


@dataclass(frozen=True, slots=True)
class BusSettings:
    """How a poller treats one bus: per-request timeout, retries, and a pause between requests."""

    timeout_s: float
    retries: int = 0
    inter_request_delay_s: float = 0.0

    def __post_init__(self) -> None:
        if not 0.01 <= self.timeout_s <= 10:
            raise InvalidInput("must be between 0.01 and 10 seconds", field="timeout")
        if not 0 <= self.retries <= 3:
            raise InvalidInput("must be between 0 and 3", field="retries")
        if not 0 <= self.inter_request_delay_s <= 1:
            raise InvalidInput("must be between 0 and 1 second", field="inter_request_delay")

    @property
    def worst_case_s(self) -> float:
        """Bus time one unanswered request costs."""
        return self.timeout_s * (self.retries + 1) + self.inter_request_delay_s

    @classmethod
    def for_serial(
        cls, line: SerialLine, *, registers: int = MAX_REGISTERS_PER_READ, margin_s: float = 0.25
    ) -> BusSettings:
        """The timeout a reply of `registers` registers needs on `line`, plus a margin for the meter's turnaround.

        At 9600 8N1 a 10-register read takes 42 ms on the wire, so the timeout is about 0.3 s: a dead meter costs
        0.3 s of bus time per cycle instead of pymodbus's 12 s.
        """
        return cls(timeout_s=round(line.read_time(registers) + margin_s, 3))

    @classmethod
    def for_tcp(cls) -> BusSettings:
        return cls(timeout_s=1.0)


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    dead_after_failures: int = 3
    initial_backoff_s: float = 10.0
    max_backoff_s: float = 300.0
    max_dead_probes_per_cycle: int = 1

    def __post_init__(self) -> None:
        if self.dead_after_failures < 1:
            raise InvalidInput("must be at least 1", field="dead_after_failures")
        if not 0 < self.initial_backoff_s <= self.max_backoff_s:
            raise InvalidInput("must be positive and at most the maximum backoff", field="initial_backoff_s")
        if self.max_dead_probes_per_cycle < 1:
            raise InvalidInput("must be at least 1", field="max_dead_probes_per_cycle")

    def backoff_s(self, failures: int) -> float:
        """The wait before probing a meter that has failed `failures` times in a row (it is dead)."""
        doublings = max(failures - self.dead_after_failures, 0)
        return float(min(self.initial_backoff_s * 2.0 ** min(doublings, 32), self.max_backoff_s))


@dataclass(slots=True)
class _Slot:
    interval: timedelta
    due: datetime
    order: int
    failures: int = 0

    def dead(self, policy: BackoffPolicy) -> bool:
        return self.failures >= policy.dead_after_failures


class BusScheduler:
    """Which meters of one bus to poll now, and when to look again. Time is passed in; nothing sleeps here."""

    def __init__(self, policy: BackoffPolicy | None = None) -> None:
        self.policy = policy or BackoffPolicy()
        self._slots: dict[str, _Slot] = {}
        self._added = 0

    def add(self, meter_id: str, interval_s: float, now: datetime) -> None:
        if interval_s <= 0:
            raise InvalidInput("must be greater than 0", field="poll_interval")
        if meter_id in self._slots:
            slot = self._slots[meter_id]
            slot.interval = timedelta(seconds=interval_s)
            return
        self._added += 1
        self._slots[meter_id] = _Slot(timedelta(seconds=interval_s), now, self._added)

    def remove(self, meter_id: str) -> None:
        self._slots.pop(meter_id, None)

    @property
    def meter_ids(self) -> list[str]:
        return list(self._slots)

    def is_dead(self, meter_id: str) -> bool:
        return self._slots[meter_id].dead(self.policy)

    def due(self, now: datetime) -> list[str]:
        """The meters to poll now: live ones by due time, then at most N dead ones, the longest waiting first."""
        ready = sorted((slot.due, slot.order, meter_id) for meter_id, slot in self._slots.items() if slot.due <= now)
        live = [meter_id for _, _, meter_id in ready if not self._slots[meter_id].dead(self.policy)]
        dead = [meter_id for _, _, meter_id in ready if self._slots[meter_id].dead(self.policy)]
        return live + dead[: self.policy.max_dead_probes_per_cycle]

    def next_due(self) -> datetime | None:
        return min((slot.due for slot in self._slots.values()), default=None)

    def record_success(self, meter_id: str, now: datetime) -> None:
        slot = self._slots.get(meter_id)
        if slot is None:
            return
        slot.failures = 0
        self._advance(slot, now)

    def record_failure(self, meter_id: str, now: datetime) -> None:
        slot = self._slots.get(meter_id)
        if slot is None:
            return
        slot.failures += 1
        if slot.dead(self.policy):
            slot.due = now + timedelta(seconds=self.policy.backoff_s(slot.failures))
        else:
            self._advance(slot, now)

    @staticmethod
    def _advance(slot: _Slot, now: datetime) -> None:
        # Keep the cadence of the schedule, not of the reads; a bus that fell behind polls again at once.
        following = slot.due + slot.interval
        slot.due = following if following > now else now


DEFAULT_TCP_PORT = 502


@dataclass(frozen=True, slots=True)
class TcpEndpoint:
    host: str
    port: int = DEFAULT_TCP_PORT

    @property
    def key(self) -> str:
        return f"tcp://{self.host}:{self.port}"

    @classmethod
    def parse(cls, text: str) -> TcpEndpoint:
        """`HOST` or `HOST:PORT` (`[v6]:PORT` for IPv6); InvalidInput (field `tcp`) when malformed."""
        host, port = text.strip(), DEFAULT_TCP_PORT
        if host.startswith("["):
            closing = host.find("]")
            if closing < 0:
                raise InvalidInput(f"unclosed '[' in {text!r}", field="tcp")
            rest = host[closing + 1 :]
            host = host[1:closing]
            if rest:
                if not rest.startswith(":"):
                    raise InvalidInput(f"expected HOST:PORT, got {text!r}", field="tcp")
                port = _port(rest[1:], text)
        elif host.count(":") == 1:
            host, port_text = host.split(":")
            port = _port(port_text, text)
        if not host or any(c.isspace() for c in host):
            raise InvalidInput(f"expected HOST:PORT, got {text!r}", field="tcp")
        return cls(host, port)


def _port(text: str, whole: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise InvalidInput(f"port must be 1-65535 in {whole!r}", field="tcp")
    return int(text)


@dataclass(frozen=True, slots=True)
class RtuBus:
    device: str
    line: SerialLine

    @property
    def key(self) -> str:
        return f"rtu://{self.device}"


Transport = TcpEndpoint | RtuBus
