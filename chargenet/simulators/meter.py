"""Simulated Modbus energy meters on pymodbus's real server, over TCP or RTU.

A `SimulatedMeter` holds what a meter measures (phase currents, the import counter) and the faults it should
show (silence, CRC errors, replies from the wrong unit id, "no value" sentinels, a counter reset). A
`MeterServer` serves any number of them, each under its unit id, with the register map of its profile: the
registers are rebuilt from the meter on every read, so the counter advances with the clock it is given.
`play` drives a meter through a scripted EV charging curve (`ev_charging_script`) for the demo and benchmarks.
`grid_meter` plays a grid meter: a base load (the building) plus what a draw function says the simulated stations
draw, both per phase, looked up at every read.

On RTU the server can hold each reply back by the wire time of the transaction at the bus's baud rate, since a
pseudo-terminal delivers bytes instantly: that makes bus timing measurable without a real RS-485 line.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from pymodbus import FramerType
from pymodbus.server import ModbusSerialServer, ModbusTcpServer
from pymodbus.simulator import DataType as SimDataType
from pymodbus.simulator import SimData, SimDevice

from chargenet.clock import Clock
from chargenet.meters.bus import SerialLine
from chargenet.meters.profiles import DataType, FunctionCode, Profile, encode_value
from chargenet.meters.readings import Quantity

VOLTAGE_V = 230.0
_PHASES = (Quantity.CURRENT_L1, Quantity.CURRENT_L2, Quantity.CURRENT_L3)


@dataclass
class SimulatedMeter:
    """One meter's measurements and faults. Mutate it freely between reads; `advance` integrates energy."""

    profile: Profile
    unit_id: int
    energy_wh: float = 0.0
    currents_a: tuple[float, ...] = (0.0, 0.0, 0.0)
    standby_w: float = 0.0  # drawn on top of the currents, e.g. a wallbox's own electronics
    silent: bool = False
    crc_errors: int = 0  # the next N replies go out with a broken CRC
    wrong_unit_replies: int = 0  # the next N replies carry another unit id
    sentinel: bool = False  # the counter reads as "no value"
    reads: int = 0
    # When set, the phase currents follow it at every read (a grid meter: `grid_meter`).
    follows: Callable[[], Sequence[float]] | None = field(default=None, repr=False)
    _updated: datetime | None = field(default=None, repr=False)

    @property
    def power_w(self) -> float:
        return sum(self.currents_a) * VOLTAGE_V + self.standby_w

    def advance(self, now: datetime) -> None:
        if self._updated is not None and now > self._updated:
            self.energy_wh += self.power_w * (now - self._updated).total_seconds() / 3600
        self._updated = now
        if self.follows is not None:
            self.currents_a = tuple(self.follows())

    def set_load(self, now: datetime, amps: float | Sequence[float], standby_w: float | None = None) -> None:
        """Draw `amps` on every phase (or per phase from a sequence) from `now` on."""
        self.advance(now)
        phases = len(self.profile.currents) or 3
        self.currents_a = tuple(amps) if isinstance(amps, Sequence) else (float(amps),) * phases
        if standby_w is not None:
            self.standby_w = standby_w

    def reset_counter(self, now: datetime, energy_wh: float = 0.0) -> None:
        """A meter reset or replacement: the counter starts again at `energy_wh`."""
        self.advance(now)
        self.energy_wh = energy_wh

    def image(self) -> dict[int, int]:
        """The register values the meter shows now, address -> 16-bit word."""
        values: dict[Quantity, float] = {Quantity.ENERGY: self.energy_wh, Quantity.POWER: self.power_w}
        values.update(zip(_PHASES, self.currents_a, strict=False))
        words: dict[int, int] = {}
        for quantity, register in self.profile.registers.items():
            value = values.get(quantity, 0.0)
            if self.sentinel and quantity is Quantity.ENERGY:
                raw_words = _no_value(register.datatype, self.profile)
            else:
                raw = _raw(value, register.scale, register.datatype, counter=quantity is Quantity.ENERGY)
                raw_words = encode_value(raw, register.datatype, self.profile.word_order)
            for offset, word in enumerate(raw_words):
                words[register.address + offset] = word
        return words


def grid_meter(
    profile: Profile, unit_id: int, base_a: float | Sequence[float], draw: Callable[[], float | Sequence[float]]
) -> SimulatedMeter:
    """A grid meter whose reading is `base_a` (one value for every phase, or per phase) plus what `draw` says the
    stations below it draw now (likewise), at every read."""
    phases = len(profile.currents) or 3

    def per_phase(amps: float | Sequence[float]) -> tuple[float, ...]:
        return tuple(amps) if isinstance(amps, Sequence) else (float(amps),) * phases

    def reading() -> tuple[float, ...]:
        return tuple(base + drawn for base, drawn in zip(per_phase(base_a), per_phase(draw()), strict=True))

    return SimulatedMeter(profile, unit_id, follows=reading)


def _raw(value: float, scale: Decimal, datatype: DataType, *, counter: bool) -> int | float:
    raw = value / float(scale)
    if datatype is DataType.FLOAT32:
        return raw
    # A counter shows its last completed step; currents and power round.
    return math.floor(raw) if counter else round(raw)


def _no_value(datatype: DataType, profile: Profile) -> list[int]:
    if datatype is DataType.FLOAT32:
        return encode_value(math.nan, datatype, profile.word_order)
    sentinel = datatype.sentinel
    assert sentinel is not None
    return [(sentinel >> (16 * i)) & 0xFFFF for i in reversed(range(datatype.registers))]


def modbus_crc(frame: bytes) -> bytes:
    crc = 0xFFFF
    for byte in frame:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc.to_bytes(2, "little")


class MeterServer:
    """pymodbus's server answering for a set of simulated meters (one TCP endpoint or one RTU bus)."""

    def __init__(
        self,
        meters: Sequence[SimulatedMeter],
        clock: Clock,
        *,
        rtu: bool,
        wire: SerialLine | None = None,
        turnaround_s: float = 0.0,
    ) -> None:
        self.meters = {meter.unit_id: meter for meter in meters}
        if len(self.meters) != len(meters):
            raise ValueError("two simulated meters share a unit id")
        self._clock = clock
        self._rtu = rtu
        self._wire = wire
        self._turnaround_s = turnaround_s
        self._server: Any = None
        self.port: int | None = None

    def _devices(self) -> list[SimDevice]:
        devices = [self._device(meter) for meter in self.meters.values()]
        # Unit id 0 answers for every other id, so pymodbus does not fail on them; `_trace` then drops those
        # replies, because a real bus stays silent for an absent unit.
        devices.append(SimDevice(0, simdata=_blocks(None)))
        return devices

    def _device(self, meter: SimulatedMeter) -> SimDevice:
        addresses = [a for r in meter.profile.registers.values() for a in range(r.address, r.end)]
        start, end = min(addresses), max(addresses) + 1
        clock, wire, turnaround = self._clock, self._wire, self._turnaround_s

        async def refresh(
            function_code: int, start_address: int, address: int, count: int, registers: list[int], values: Any
        ) -> None:
            meter.advance(clock.now())
            meter.reads += 1
            for word_address, word in meter.image().items():
                registers[word_address - start_address] = word
            if wire is not None:
                await asyncio.sleep(wire.read_time(count, turnaround))

        block = SimData(start, count=end - start, values=0, datatype=SimDataType.REGISTERS)
        return SimDevice(meter.unit_id, simdata=_blocks((meter.profile.function_code, block)), action=refresh)

    def _trace(self, sending: bool, packet: bytes) -> bytes:
        if not sending or not packet:
            return packet
        unit_index = 0 if self._rtu else 6
        meter = self.meters.get(packet[unit_index])
        if meter is None or meter.silent:
            return b""
        if meter.wrong_unit_replies > 0:
            meter.wrong_unit_replies -= 1
            wrong = (meter.unit_id % 247) + 1
            packet = packet[:unit_index] + bytes([wrong]) + packet[unit_index + 1 :]
            if self._rtu:
                packet = packet[:-2] + modbus_crc(packet[:-2])
        if meter.crc_errors > 0 and self._rtu:
            meter.crc_errors -= 1
            packet = packet[:-1] + bytes([packet[-1] ^ 0xFF])
        return packet

    @classmethod
    async def tcp(
        cls, meters: Sequence[SimulatedMeter], clock: Clock, host: str = "127.0.0.1", port: int = 0
    ) -> MeterServer:
        server = cls(meters, clock, rtu=False)
        server._server = ModbusTcpServer(server._devices(), address=(host, port), trace_packet=server._trace)
        await server._server.serve_forever(background=True)
        server.port = server._server.transport.sockets[0].getsockname()[1]
        return server

    @classmethod
    async def serial(
        cls,
        meters: Sequence[SimulatedMeter],
        clock: Clock,
        device: str,
        line: SerialLine,
        *,
        emulate_wire_time: bool = False,
        turnaround_s: float = 0.0,
    ) -> MeterServer:
        """An RTU bus on the serial `device` (one end of a `serial_bus` pseudo-terminal pair in tests and the demo)."""
        server = cls(meters, clock, rtu=True, wire=line if emulate_wire_time else None, turnaround_s=turnaround_s)
        server._server = ModbusSerialServer(
            server._devices(),
            framer=FramerType.RTU,
            port=device,
            baudrate=line.baudrate,
            parity=line.parity.value,
            stopbits=line.stopbits,
            trace_packet=server._trace,
        )
        await server._server.serve_forever(background=True)
        return server

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.shutdown()
            self._server = None


def _blocks(
    registers: tuple[FunctionCode, SimData] | None,
) -> tuple[list[SimData], list[SimData], list[SimData], list[SimData]]:
    # Holding and input registers are separate blocks, so a poll with the wrong function code gets exception 2
    # (illegal address), as from a real meter.
    unused = SimData(0xFFFE, count=1, values=0, datatype=SimDataType.REGISTERS)
    holding, inputs = [unused], [unused]
    if registers is not None:
        function_code, block = registers
        if function_code is FunctionCode.READ_HOLDING_REGISTERS:
            holding = [block]
        else:
            inputs = [block]
    bits = SimData(0, values=False, datatype=SimDataType.BITS)
    return ([bits], [bits], holding, inputs)


@dataclass(frozen=True, slots=True)
class ScriptStep:
    """Hold a load for `duration_s`; faults and a counter reset apply at the start of the step."""

    duration_s: float
    amps: float | tuple[float, ...] = 0.0
    standby_w: float = 0.0
    silent: bool = False
    crc_errors: int = 0
    reset_to_wh: float | None = None
    label: str = ""


def ev_charging_script(*, standby_w: float = 60.0) -> list[ScriptStep]:
    """A plug-in to finish curve with the situations the detector must survive."""
    return [
        ScriptStep(120, 0.0, standby_w, label="standby, nothing plugged in"),
        ScriptStep(10, 6.0, standby_w, label="plug in: ramp at 6 A"),
        ScriptStep(600, 16.0, standby_w, label="three-phase 16 A"),
        ScriptStep(60, 0.0, standby_w, label="phase switch pause"),
        ScriptStep(600, (16.0, 0.0, 0.0), standby_w, label="single-phase 16 A"),
        ScriptStep(60, (16.0, 0.0, 0.0), standby_w, silent=True, label="meter silent"),
        ScriptStep(30, (16.0, 0.0, 0.0), standby_w, crc_errors=3, label="CRC errors"),
        ScriptStep(300, (8.0, 0.0, 0.0), standby_w, label="taper"),
        ScriptStep(600, 0.0, standby_w, label="finished, standby"),
    ]


async def play(meter: SimulatedMeter, script: Sequence[ScriptStep], clock: Clock, *, repeat: bool = False) -> None:
    """Drive `meter` through `script` on `clock` (forever with `repeat`)."""
    while True:
        for step in script:
            now = clock.now()
            if step.reset_to_wh is not None:
                meter.reset_counter(now, step.reset_to_wh)
            meter.set_load(now, step.amps, step.standby_w)
            meter.silent = step.silent
            meter.crc_errors = step.crc_errors
            await clock.sleep(step.duration_s)
        if not repeat:
            return
