"""What one poll of a meter tells the detector."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Quantity(StrEnum):
    CURRENT_L1 = "current_l1"
    CURRENT_L2 = "current_l2"
    CURRENT_L3 = "current_l3"
    POWER = "power"
    ENERGY = "energy"


@dataclass(frozen=True, slots=True)
class Reading:
    """One decoded poll.

    `currents_a` is None when the meter has no current registers (the detector then uses power), and
    `power_w` is None when the poll did not read power. A quantity the meter answered with its "no value"
    sentinel is listed in `sentinels` and its value is None (0.0 for a phase current); the detector rejects such
    a reading.
    """

    energy_wh: int | None
    currents_a: tuple[float, ...] | None = None
    power_w: float | None = None
    sentinels: frozenset[Quantity] = frozenset()

    @property
    def max_current_a(self) -> float | None:
        if not self.currents_a:
            return None
        return max(abs(current) for current in self.currents_a)
