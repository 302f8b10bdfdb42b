"""Carlo Gavazzi EM24 and EM330/EM340: FC4 input registers, INT32 low word first (mbmd `carlogavazzi-*.go`).

Currents in mA, power in 0.1 W, energy in 0.1 kWh steps (100 Wh): a session under 0.1 kWh reads as 0.
"""

from __future__ import annotations

from decimal import Decimal

from chargenet.meters.profiles.base import DataType, FunctionCode, Profile, Register, WordOrder

_MILLI = Decimal("0.001")
_DECI = Decimal("0.1")
_DECI_KWH = Decimal(100)


def _int32(address: int, scale: Decimal) -> Register:
    return Register(address, DataType.INT32, scale)


EM24 = Profile(
    name="em24",
    description="Carlo Gavazzi EM24 (three-phase)",
    function_code=FunctionCode.READ_INPUT_REGISTERS,
    word_order=WordOrder.LITTLE,
    currents=(_int32(0x0C, _MILLI), _int32(0x0E, _MILLI), _int32(0x10, _MILLI)),
    power=_int32(0x28, _DECI),
    energy=_int32(0x42, _DECI_KWH),
    energy_resolution_wh=100,
)

EM340 = Profile(
    name="em340",
    description="Carlo Gavazzi EM340 / EM330 / ET340 (three-phase)",
    function_code=FunctionCode.READ_INPUT_REGISTERS,
    word_order=WordOrder.LITTLE,
    currents=(_int32(0x0C, _MILLI), _int32(0x0E, _MILLI), _int32(0x10, _MILLI)),
    power=_int32(0x28, _DECI),
    energy=_int32(0x34, _DECI_KWH),
    energy_resolution_wh=100,
)
