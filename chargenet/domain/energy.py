"""Energy: OCPP counts watt-hours, payloads carry kilowatt-hours with at most 3 decimals."""

from __future__ import annotations

from decimal import Decimal


def wh_to_kwh(wh: int) -> float:
    """Exact conversion: 12345 Wh -> 12.345 (the shortest float repr, so JSON shows no float noise)."""
    return float(Decimal(wh) / 1000)


def kwh_to_wh(kwh: float) -> int:
    return int((Decimal(str(kwh)) * 1000).to_integral_value())


def has_at_most_three_decimals(value: float) -> bool:
    exponent = Decimal(str(value)).as_tuple().exponent
    return isinstance(exponent, int) and exponent >= -3
