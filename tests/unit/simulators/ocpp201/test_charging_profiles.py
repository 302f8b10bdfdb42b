from __future__ import annotations

from typing import Any

from chargenet.simulators.ocpp201.charging_profiles import ChargingProfiles


def profile(id_: int, purpose: str, limit: float, *, unit: str = "A", stack_level: int = 0) -> dict[str, Any]:
    return {
        "id": id_,
        "stackLevel": stack_level,
        "chargingProfilePurpose": purpose,
        "chargingProfileKind": "Absolute",
        "chargingSchedule": [
            {"id": 1, "chargingRateUnit": unit, "chargingSchedulePeriod": [{"startPeriod": 0, "limit": limit}]}
        ],
    }


def test_no_profile_no_limit() -> None:
    assert ChargingProfiles().limit_w(1) is None


def test_amperes_are_watts_at_230_volts_on_three_phases_unless_the_period_says_fewer() -> None:
    profiles = ChargingProfiles()
    profiles.keep(1, profile(1, "TxDefaultProfile", 16))
    single = profile(2, "TxDefaultProfile", 16)
    single["chargingSchedule"][0]["chargingSchedulePeriod"][0]["numberPhases"] = 1
    profiles.keep(2, single)
    assert (profiles.limit_w(1), profiles.limit_w(2)) == (11040.0, 3680.0)


def test_a_transactions_profile_overrides_the_defaults_and_ends_with_it() -> None:
    profiles = ChargingProfiles()
    profiles.keep(0, profile(1, "TxDefaultProfile", 7000, unit="W"))
    profiles.keep(1, profile(2, "TxProfile", 4000, unit="W"))
    assert (profiles.limit_w(1), profiles.limit_w(2)) == (4000.0, 7000.0)
    profiles.end_transaction(1)
    assert profiles.limit_w(1) == 7000.0


def test_the_station_maximum_caps_every_evse() -> None:
    profiles = ChargingProfiles()
    profiles.keep(1, profile(1, "TxProfile", 11000, unit="W"))
    profiles.keep(0, profile(2, "ChargingStationMaxProfile", 5000, unit="W"))
    assert profiles.limit_w(1) == 5000.0


def test_the_highest_stack_level_wins_and_a_profile_replaces_the_one_with_its_id() -> None:
    profiles = ChargingProfiles()
    profiles.keep(1, profile(1, "TxDefaultProfile", 6000, unit="W", stack_level=0))
    profiles.keep(1, profile(2, "TxDefaultProfile", 3000, unit="W", stack_level=1))
    assert profiles.limit_w(1) == 3000.0
    profiles.keep(1, profile(2, "TxDefaultProfile", 9000, unit="W", stack_level=1))
    assert profiles.limit_w(1) == 9000.0 and len(profiles.kept) == 2
