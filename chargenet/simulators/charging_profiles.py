"""The charging profiles a 1.6 station keeps, and the current they allow a connector now (no I/O).

Kept as SetChargingProfile gives them: a profile replaces the one with its id, and the one of the same purpose and
stack level on the same connector. The limit in force on a connector is the first period's of the highest stack
level of each purpose: a transaction's own profile over the default ones (the connector's over connector 0's),
capped by the charge point's maximum profile. Watts are amperes at 230 V per phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Payload = dict[str, Any]

VOLTS = 230.0


@dataclass
class _Kept:
    connector_id: int
    profile: Payload

    @property
    def purpose(self) -> str:
        return str(self.profile["chargingProfilePurpose"])

    @property
    def stack_level(self) -> int:
        return int(self.profile["stackLevel"])


def first_limit_a(profile: Payload, phases: int) -> float:
    """The limit of the profile's first period, in amperes per phase."""
    schedule = profile["chargingSchedule"]
    period = min(schedule["chargingSchedulePeriod"], key=lambda p: p["startPeriod"])
    if schedule["chargingRateUnit"] == "A":
        return float(period["limit"])
    return float(period["limit"]) / VOLTS / int(period.get("numberPhases", phases))


@dataclass
class ChargingProfiles16:
    kept: list[_Kept] = field(default_factory=list)

    def set(self, payload: Payload) -> Payload:
        """The answer to SetChargingProfile: kept, or Rejected (a TxProfile needs a transaction, not on connector 0)."""
        connector_id, profile = int(payload["connectorId"]), payload["csChargingProfiles"]
        if profile["chargingProfilePurpose"] == "TxProfile" and connector_id == 0:
            return {"status": "Rejected"}
        new = _Kept(connector_id, profile)
        self.kept = [
            p
            for p in self.kept
            if p.profile["chargingProfileId"] != profile["chargingProfileId"]
            and (p.connector_id, p.purpose, p.stack_level) != (connector_id, new.purpose, new.stack_level)
        ]
        self.kept.append(new)
        return {"status": "Accepted"}

    def clear(self, payload: Payload) -> Payload:
        def cleared(p: _Kept) -> bool:
            if "id" in payload:
                return bool(p.profile["chargingProfileId"] == payload["id"])
            return all(
                payload[key] == value
                for key, value in (
                    ("connectorId", p.connector_id),
                    ("chargingProfilePurpose", p.purpose),
                    ("stackLevel", p.stack_level),
                )
                if key in payload
            )

        before = len(self.kept)
        self.kept = [p for p in self.kept if not cleared(p)]
        return {"status": "Accepted" if len(self.kept) < before else "Unknown"}

    def end_transaction(self, transaction_id: int) -> None:
        """A transaction's profiles end with it."""
        self.kept = [
            p
            for p in self.kept
            if not (p.purpose == "TxProfile" and p.profile.get("transactionId", transaction_id) == transaction_id)
        ]

    def _top(self, purpose: str, connector_id: int) -> _Kept | None:
        candidates = [p for p in self.kept if p.purpose == purpose and p.connector_id == connector_id]
        return max(candidates, key=lambda p: p.stack_level, default=None)

    def limit_a(self, connector_id: int, phases: int) -> float | None:
        """The current per phase the profiles allow the connector now, or None when no profile limits it."""
        own = (
            self._top("TxProfile", connector_id)
            or self._top("TxDefaultProfile", connector_id)
            or self._top("TxDefaultProfile", 0)
        )
        station_max = self._top("ChargePointMaxProfile", 0)
        limits = [first_limit_a(p.profile, phases) for p in (own, station_max) if p is not None]
        return min(limits, default=None)

    def in_force(self, connector_id: int, purpose: str) -> Payload | None:
        """The profile of `purpose` in force on the connector (its highest stack level), as it was sent."""
        top = self._top(purpose, connector_id)
        return None if top is None else top.profile
