"""The energy and power a station reports in MeterValues (and in StopTransaction's transactionData).

OCPP 1.6 §7.31-7.33: a MeterValue is a timestamp and sampled values; a sampled value without `measurand` is
`Energy.Active.Import.Register`, without `unit` Wh (W for power), without `location` at the Outlet. A session's
chart needs the energy delivered through the connector, so only the Outlet's totals count: a value per phase,
one measured at the inlet or in the vehicle, and a signed value (`format` SignedData) are left out, and so is a
value that is not a finite number, a negative energy, or a value beyond any meter's (which the store's 64-bit
columns could not hold: one such value must not cost the batch it is written with). A MeterValue without an
energy register is no sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

ENERGY = "Energy.Active.Import.Register"
POWER = "Power.Active.Import"
MAX_ENERGY_WH = Decimal(10**15)  # a petawatt-hour register: beyond any meter
MAX_POWER_W = Decimal(10**9)
_ENERGY_UNITS = {"Wh": Decimal(1), "kWh": Decimal(1000)}
_POWER_UNITS = {"W": Decimal(1), "kW": Decimal(1000)}


@dataclass(frozen=True, slots=True)
class Reported:
    at: datetime
    energy_wh: int
    power_w: float | None


def _value(sampled: dict[str, Any], measurand: str, units: dict[str, Decimal], default_unit: str) -> Decimal | None:
    if sampled.get("measurand", ENERGY) != measurand or "phase" in sampled:
        return None
    if sampled.get("location", "Outlet") != "Outlet" or sampled.get("format", "Raw") != "Raw":
        return None
    unit = sampled.get("unit", default_unit)
    scale = units.get(unit) if isinstance(unit, str) else None
    if scale is None:
        return None
    try:
        value = Decimal(str(sampled.get("value", "")))
    except InvalidOperation:
        return None
    return value * scale if value.is_finite() else None


def reported(meter_values: Any) -> list[Reported]:
    """The samples in a list of MeterValue objects (as the schema-checked payload holds them)."""
    found: list[Reported] = []
    if not isinstance(meter_values, list):
        return found
    for meter_value in meter_values:
        if not isinstance(meter_value, dict) or not isinstance(meter_value.get("sampledValue"), list):
            continue
        try:
            at = datetime.fromisoformat(str(meter_value.get("timestamp")))
            # In UTC here, as the store keeps it: an instant that has none (year 1 east of Greenwich) is no sample.
            at = at.astimezone(UTC) if at.tzinfo is not None else at
        except (ValueError, OverflowError):
            continue
        if at.tzinfo is None:
            continue
        energy: Decimal | None = None
        power: Decimal | None = None
        for sampled in meter_value["sampledValue"]:
            if not isinstance(sampled, dict):
                continue
            energy = energy if energy is not None else _value(sampled, ENERGY, _ENERGY_UNITS, "Wh")
            power = power if power is not None else _value(sampled, POWER, _POWER_UNITS, "W")
        if power is not None and abs(power) > MAX_POWER_W:
            power = None
        if energy is not None and 0 <= energy <= MAX_ENERGY_WH:
            found.append(Reported(at, int(energy.to_integral_value()), None if power is None else float(power)))
    return found
