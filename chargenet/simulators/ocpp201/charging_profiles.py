"""The charging profiles a 2.0.1 station keeps, and the power they allow an EVSE now (no I/O).

Kept as SetChargingProfile gives them (K01): a profile replaces the one with its id, and the one of the same
purpose and stack level on the same EVSE. The limit in force is the first period's of the highest stack level
of each purpose: a transaction's own profile over the default ones (an EVSE's default over the station's), capped
by the station's maximum profile. Amperes are watts at 230 V per phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Payload = dict[str, Any]

VOLTS = 230.0
DEFAULT_PHASES = 3


@dataclass
class KeptProfile:
    evse_id: int
    profile: Payload

    @property
    def purpose(self) -> str:
        return str(self.profile["chargingProfilePurpose"])

    @property
    def stack_level(self) -> int:
        return int(self.profile["stackLevel"])


def first_limit_w(profile: Payload) -> float:
    """The limit of the profile's first schedule's first period, in watts."""
    schedule = profile["chargingSchedule"][0]
    period = min(schedule["chargingSchedulePeriod"], key=lambda p: p["startPeriod"])
    if schedule["chargingRateUnit"] == "W":
        return float(period["limit"])
    return float(period["limit"]) * VOLTS * int(period.get("numberPhases", DEFAULT_PHASES))


@dataclass
class ChargingProfiles:
    kept: list[KeptProfile] = field(default_factory=list)

    def keep(self, evse_id: int, profile: Payload) -> None:
        new = KeptProfile(evse_id, profile)
        self.kept = [
            p
            for p in self.kept
            if p.profile["id"] != profile["id"]
            and (p.evse_id, p.purpose, p.stack_level) != (evse_id, new.purpose, new.stack_level)
        ]
        self.kept.append(new)

    def clear(self, request: Payload) -> bool:
        """ClearChargingProfile (K10): by id, or by its criteria (EVSE, purpose, stack level); whether any went."""
        criteria = request.get("chargingProfileCriteria", {})

        def named(kept: KeptProfile) -> bool:
            if "chargingProfileId" in request:
                return bool(kept.profile["id"] == request["chargingProfileId"])
            return bool(
                criteria.get("evseId", kept.evse_id) == kept.evse_id
                and criteria.get("chargingProfilePurpose", kept.purpose) == kept.purpose
                and criteria.get("stackLevel", kept.stack_level) == kept.stack_level
            )

        before = len(self.kept)
        self.kept = [p for p in self.kept if not named(p)]
        return len(self.kept) < before

    def end_transaction(self, evse_id: int) -> None:
        """A transaction's profiles end with it."""
        self.kept = [p for p in self.kept if not (p.evse_id == evse_id and p.purpose == "TxProfile")]

    def _top(self, purpose: str, evse_id: int) -> KeptProfile | None:
        candidates = [p for p in self.kept if p.purpose == purpose and p.evse_id == evse_id]
        return max(candidates, key=lambda p: p.stack_level, default=None)

    def limit_w(self, evse_id: int) -> float | None:
        """The power the profiles allow the EVSE now, or None when no profile limits it."""
        own = (
            self._top("TxProfile", evse_id)
            or self._top("TxDefaultProfile", evse_id)
            or self._top("TxDefaultProfile", 0)
        )
        station_max = self._top("ChargingStationMaxProfile", 0)
        limits = [first_limit_w(p.profile) for p in (own, station_max) if p is not None]
        return min(limits, default=None)
