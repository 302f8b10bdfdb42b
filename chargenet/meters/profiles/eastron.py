"""Eastron meters: FC4 input registers, IEEE 754 float32, high word first (mbmd `sdm.go`, openWB `sdm.py`)."""

from __future__ import annotations

from decimal import Decimal

from chargenet.meters.profiles.base import DataType, FunctionCode, Profile, Register, WordOrder

_KWH = Decimal(1000)


def _f32(address: int, scale: Decimal = Decimal(1)) -> Register:
    return Register(address, DataType.FLOAT32, scale)


SDM630 = Profile(
    name="sdm630",
    description="Eastron SDM630 (three-phase)",
    function_code=FunctionCode.READ_INPUT_REGISTERS,
    word_order=WordOrder.BIG,
    currents=(_f32(0x0006), _f32(0x0008), _f32(0x000A)),
    power=_f32(0x0034),
    energy=_f32(0x0048, _KWH),
)

SDM72V2 = Profile(
    name="sdm72v2",
    description="Eastron SDM72D-M v2 (three-phase, same map as the SDM630 for these values)",
    function_code=FunctionCode.READ_INPUT_REGISTERS,
    word_order=WordOrder.BIG,
    currents=(_f32(0x0006), _f32(0x0008), _f32(0x000A)),
    power=_f32(0x0034),
    energy=_f32(0x0048, _KWH),
)

# The SDM72 v1 has no current or voltage registers (mbmd `sdm72.go`): detection runs on power alone.
SDM72V1 = Profile(
    name="sdm72v1",
    description="Eastron SDM72 v1 (three-phase, power and energy only)",
    function_code=FunctionCode.READ_INPUT_REGISTERS,
    word_order=WordOrder.BIG,
    power=_f32(0x0034),
    energy=_f32(0x0048, _KWH),
)

SDM120 = Profile(
    name="sdm120",
    description="Eastron SDM120 (single-phase)",
    function_code=FunctionCode.READ_INPUT_REGISTERS,
    word_order=WordOrder.BIG,
    currents=(_f32(0x0006),),
    power=_f32(0x000C),
    energy=_f32(0x0048, _KWH),
)
