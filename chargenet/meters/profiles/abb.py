"""ABB B23/B24: FC3 holding registers, scaled integers, high word first, all-ones "no value" sentinels.

Source: mbmd `abb.go`, openWB `common/b23.py`. Import energy is U64 in 0.01 kWh (10 Wh) steps.
"""

from __future__ import annotations

from decimal import Decimal

from chargenet.meters.profiles.base import DataType, FunctionCode, Profile, Register, WordOrder

_CENTI = Decimal("0.01")


def _abb(name: str, description: str) -> Profile:
    return Profile(
        name=name,
        description=description,
        function_code=FunctionCode.READ_HOLDING_REGISTERS,
        word_order=WordOrder.BIG,
        currents=(
            Register(0x5B0C, DataType.UINT32, _CENTI),
            Register(0x5B0E, DataType.UINT32, _CENTI),
            Register(0x5B10, DataType.UINT32, _CENTI),
        ),
        power=Register(0x5B14, DataType.INT32, _CENTI),
        energy=Register(0x5000, DataType.UINT64, Decimal(10)),
        nan_sentinels=True,
        energy_resolution_wh=10,
    )


ABB_B23 = _abb("abb-b23", "ABB B23 (three-phase, direct connected)")
ABB_B24 = _abb("abb-b24", "ABB B24 (three-phase, transformer connected)")
