"""Register maps as data: a profile declares where each quantity lives and how it is encoded.

Theory of operation. A meter profile names, for each quantity the detector needs (phase currents, total active
power, imported energy), the 0-based PDU address, the data type and the factor that turns the raw number into
amperes, watts or watt-hours. The function code (3 holding, 4 input), the word order of 32/64-bit values and
whether the all-ones/maximum integer means "no value" (ABB) belong to the whole profile. From that declaration
`read_plan` derives the few read requests a poll needs and `decode` turns their registers into a `Reading`,
without any Modbus library: registers are plain 16-bit integers.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from enum import IntEnum, StrEnum

from chargenet.meters.errors import MeterReplyInvalid
from chargenet.meters.readings import Quantity, Reading


class FunctionCode(IntEnum):
    READ_HOLDING_REGISTERS = 3
    READ_INPUT_REGISTERS = 4


class WordOrder(StrEnum):
    BIG = "big"  # high word first (Eastron, ABB)
    LITTLE = "little"  # low word first (Carlo Gavazzi, Phoenix Contact)


class DataType(StrEnum):
    UINT16 = "uint16"
    INT16 = "int16"
    UINT32 = "uint32"
    INT32 = "int32"
    UINT64 = "uint64"
    INT64 = "int64"
    FLOAT32 = "float32"

    @property
    def registers(self) -> int:
        return _REGISTERS[self]

    @property
    def sentinel(self) -> int | None:
        """The raw value ABB-style meters send for "no value" (mbmd `wrapTransform`, openWB `check_nan`)."""
        return _SENTINELS.get(self)


_REGISTERS = {
    DataType.UINT16: 1,
    DataType.INT16: 1,
    DataType.UINT32: 2,
    DataType.INT32: 2,
    DataType.UINT64: 4,
    DataType.INT64: 4,
    DataType.FLOAT32: 2,
}
_STRUCT = {
    DataType.UINT16: ">H",
    DataType.INT16: ">h",
    DataType.UINT32: ">I",
    DataType.INT32: ">i",
    DataType.UINT64: ">Q",
    DataType.INT64: ">q",
    DataType.FLOAT32: ">f",
}
_WORDS = {1: ">H", 2: ">HH", 4: ">HHHH"}
_SENTINELS = {
    DataType.UINT16: 0xFFFF,
    DataType.INT16: 0x7FFF,
    DataType.UINT32: 0xFFFFFFFF,
    DataType.INT32: 0x7FFFFFFF,
    DataType.UINT64: 0xFFFFFFFFFFFFFFFF,
    DataType.INT64: 0x7FFFFFFFFFFFFFFF,
}


@dataclass(frozen=True, slots=True)
class Register:
    """Where one quantity lives: `value in unit = raw x scale` (unit: A, W or Wh)."""

    address: int
    datatype: DataType
    scale: Decimal = Decimal(1)

    @property
    def end(self) -> int:
        return self.address + self.datatype.registers


@dataclass(frozen=True, slots=True)
class ReadBlock:
    """One read request: `count` registers from `address` with the profile's function code."""

    address: int
    count: int


@dataclass(frozen=True, slots=True)
class Profile:
    """A meter model's register map. A new meter model is one more `Profile(...)` declaration.

    `currents` is empty for meters without current registers (SDM72 v1); they must declare `power`, which the
    detector then uses. `energy` is the *import* counter (what evcc and openWB read), not import + export.
    `energy_resolution_wh` is the counter's step, which the plausibility checks allow for.
    """

    name: str
    description: str
    function_code: FunctionCode
    word_order: WordOrder
    energy: Register
    currents: tuple[Register, ...] = ()
    power: Register | None = None
    nan_sentinels: bool = False
    energy_resolution_wh: int = 10
    max_registers_per_read: int = 125
    # Two neighbouring quantities are read in one request when at most this many unused registers lie between
    # them: on RS-485 one more request costs ~20 characters of framing and silence plus the meter's turnaround,
    # about as much as 10 registers of payload.
    merge_gap: int = 10
    required: tuple[Quantity, ...] = field(init=False)
    # Derived once: the profile is data, and a poll must not pay for planning.
    polled: dict[Quantity, Register] = field(init=False, repr=False, compare=False)
    read_plan: tuple[ReadBlock, ...] = field(init=False, repr=False, compare=False)
    _layout: tuple[_Slot, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.currents and self.power is None:
            raise ValueError(f"profile {self.name}: a meter without currents must declare power")
        if len(self.currents) > 3:
            raise ValueError(f"profile {self.name}: at most 3 phase currents")
        for register in self.registers.values():
            if register.datatype.registers > self.max_registers_per_read:
                raise ValueError(f"profile {self.name}: a value does not fit in one read")
        required = [Quantity.ENERGY, *_PHASES[: len(self.currents)]]
        if not self.currents:
            required.append(Quantity.POWER)
        object.__setattr__(self, "required", tuple(required))
        polled = self._polled()
        plan = _plan(list(polled.values()), self.merge_gap, self.max_registers_per_read)
        layout = []
        for quantity, register in polled.items():
            index, block = next((i, b) for i, b in enumerate(plan) if b.address <= register.address < _end(b))
            offset = register.address - block.address
            layout.append(
                _Slot(
                    quantity,
                    index,
                    offset,
                    offset + register.datatype.registers,
                    self.word_order is WordOrder.LITTLE and register.datatype.registers > 1,
                    _WORDS[register.datatype.registers],
                    _STRUCT[register.datatype],
                    register.datatype.sentinel if self.nan_sentinels else None,
                    register.datatype is DataType.FLOAT32,
                    register.scale,
                    float(register.scale),
                    int(register.scale) if register.scale == register.scale.to_integral_value() else None,
                )
            )
        object.__setattr__(self, "polled", polled)
        object.__setattr__(self, "read_plan", plan)
        object.__setattr__(self, "_layout", tuple(layout))

    @property
    def registers(self) -> dict[Quantity, Register]:
        """Every quantity the profile declares, whether a poll reads it or not."""
        registers: dict[Quantity, Register] = {Quantity.ENERGY: self.energy}
        registers.update(zip(_PHASES, self.currents, strict=False))
        if self.power is not None:
            registers[Quantity.POWER] = self.power
        return registers

    def _polled(self) -> dict[Quantity, Register]:
        """The quantities a poll reads: what the detector needs, plus power when it costs no extra request."""
        registers = self.registers
        needed = {quantity: registers[quantity] for quantity in self.required}
        if Quantity.POWER in registers and Quantity.POWER not in needed:
            with_power = _plan(
                [*needed.values(), registers[Quantity.POWER]], self.merge_gap, self.max_registers_per_read
            )
            if len(with_power) == len(_plan(list(needed.values()), self.merge_gap, self.max_registers_per_read)):
                needed[Quantity.POWER] = registers[Quantity.POWER]
        return needed

    def decode(self, replies: Sequence[Sequence[int]]) -> Reading:
        """Decode the registers of the `read_plan` requests, in plan order, into a Reading.

        Raises MeterReplyInvalid when the replies do not match the plan (a short reply, a value over 16 bits).
        """
        plan = self.read_plan
        if len(replies) != len(plan):
            raise MeterReplyInvalid(f"{self.name}: expected {len(plan)} replies, got {len(replies)}")
        for block, registers in zip(plan, replies, strict=True):
            if len(registers) != block.count:
                raise MeterReplyInvalid(
                    f"{self.name}: read at {block.address:#06x} returned {len(registers)} registers, not {block.count}"
                )
        energy: int | None = None
        currents: list[float] = []
        power: float | None = None
        sentinels: list[Quantity] = []
        for slot in self._layout:
            words = replies[slot.index][slot.start : slot.end]
            if slot.reverse:
                words = words[::-1]
            try:
                packed = struct.pack(slot.words_format, *words)
            except struct.error:
                raise MeterReplyInvalid(f"{self.name}: register values must be 16-bit, got {list(words)}") from None
            raw: int | float = struct.unpack(slot.value_format, packed)[0]
            if (slot.sentinel is not None and int.from_bytes(packed, "big") == slot.sentinel) or (
                slot.is_float and not math.isfinite(raw)
            ):
                sentinels.append(slot.quantity)
                if slot.quantity in _PHASES:
                    currents.append(0.0)
            elif slot.quantity is Quantity.ENERGY:
                energy = _counter(raw, slot.scale, slot.whole_scale)
            elif slot.quantity is Quantity.POWER:
                power = raw * slot.float_scale
            else:
                currents.append(raw * slot.float_scale)
        return Reading(
            energy_wh=energy,
            currents_a=tuple(currents) or None,
            power_w=power,
            sentinels=frozenset(sentinels),
        )


@dataclass(frozen=True, slots=True)
class _Slot:
    """Where and how one polled value is decoded, worked out once per profile."""

    quantity: Quantity
    index: int
    start: int
    end: int
    reverse: bool
    words_format: str
    value_format: str
    sentinel: int | None
    is_float: bool
    scale: Decimal
    float_scale: float
    whole_scale: int | None


_PHASES = (Quantity.CURRENT_L1, Quantity.CURRENT_L2, Quantity.CURRENT_L3)


def _end(block: ReadBlock) -> int:
    return block.address + block.count


def _plan(registers: list[Register], merge_gap: int, max_count: int) -> tuple[ReadBlock, ...]:
    blocks: list[ReadBlock] = []
    for register in sorted(registers, key=lambda r: r.address):
        if blocks:
            last = blocks[-1]
            gap = register.address - _end(last)
            new_end = max(_end(last), register.end)
            if gap <= merge_gap and new_end - last.address <= max_count:
                blocks[-1] = ReadBlock(last.address, new_end - last.address)
                continue
        blocks.append(ReadBlock(register.address, register.datatype.registers))
    return tuple(blocks)


def decode_value(
    registers: Sequence[int], datatype: DataType, word_order: WordOrder, *, nan_sentinel: bool = False
) -> int | float | None:
    """One raw value from its registers; None for "no value" (a sentinel, or a float NaN or infinity)."""
    if len(registers) != datatype.registers:
        raise MeterReplyInvalid(f"{datatype} needs {datatype.registers} registers, got {len(registers)}")
    words = registers if word_order is WordOrder.BIG else registers[::-1]
    try:
        packed = struct.pack(_WORDS[datatype.registers], *words)
    except struct.error:
        raise MeterReplyInvalid(f"register values must be 16-bit, got {list(registers)}") from None
    if nan_sentinel and datatype.sentinel is not None and int.from_bytes(packed, "big") == datatype.sentinel:
        return None
    value: int | float = struct.unpack(_STRUCT[datatype], packed)[0]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def encode_value(value: int | float, datatype: DataType, word_order: WordOrder) -> list[int]:
    """The registers a meter sends for a raw value (used by the simulator and the tests)."""
    raw = float(value) if datatype is DataType.FLOAT32 else int(value)
    packed = struct.pack(_STRUCT[datatype], raw)
    words = [int.from_bytes(packed[i : i + 2], "big") for i in range(0, len(packed), 2)]
    return words if word_order is WordOrder.BIG else list(reversed(words))


def _counter(raw: int | float, scale: Decimal, whole_scale: int | None) -> int:
    # Counters must be exact. With a whole-number scale they are: an integer times an integer, or a float32
    # (24-bit mantissa) times a factor under 2**29, which a double holds without rounding; `round` then
    # rounds once, half to even, to whole watt-hours. Any other scale goes through Decimal.
    if whole_scale is not None:
        return round(raw * whole_scale)
    return int((Decimal(raw) * scale).to_integral_value(rounding=ROUND_HALF_EVEN))
