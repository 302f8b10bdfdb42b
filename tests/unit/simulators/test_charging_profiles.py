"""The profiles a simulated 1.6 station keeps, and the current they allow a connector."""

from __future__ import annotations

from typing import Any

from chargenet.simulators.charging_profiles import ChargingProfiles16


def request(connector: int, purpose: str, limit: float, *, profile_id: int = 1, stack: int = 0, unit: str = "A") -> Any:
    profile = {
        "chargingProfileId": profile_id,
        "stackLevel": stack,
        "chargingProfilePurpose": purpose,
        "chargingProfileKind": "Relative",
        "chargingSchedule": {"chargingRateUnit": unit, "chargingSchedulePeriod": [{"startPeriod": 0, "limit": limit}]},
    }
    if purpose == "TxProfile":
        profile["transactionId"] = 7
    return {"connectorId": connector, "csChargingProfiles": profile}


def test_a_transactions_profile_wins_over_the_connectors_default_and_that_over_connector_0s() -> None:
    kept = ChargingProfiles16()
    kept.set(request(0, "TxDefaultProfile", 16, profile_id=1))
    assert kept.limit_a(1, 3) == 16
    kept.set(request(1, "TxDefaultProfile", 6, profile_id=2))
    assert kept.limit_a(1, 3) == 6
    kept.set(request(1, "TxProfile", 10, profile_id=3))
    assert kept.limit_a(1, 3) == 10


def test_a_profile_with_the_same_id_replaces_the_last_and_ends_with_its_transaction() -> None:
    kept = ChargingProfiles16()
    kept.set(request(1, "TxProfile", 10, profile_id=3))
    kept.set(request(1, "TxProfile", 12, profile_id=3, stack=1))
    assert kept.limit_a(1, 3) == 12
    kept.end_transaction(7)
    assert kept.limit_a(1, 3) is None


def test_the_charge_points_maximum_caps_every_connector_and_watts_count_per_phase() -> None:
    kept = ChargingProfiles16()
    kept.set(request(1, "TxProfile", 16))
    kept.set(request(0, "ChargePointMaxProfile", 6900, profile_id=9, unit="W"))
    assert kept.limit_a(1, 3) == 10


def test_a_tx_profile_on_connector_0_is_rejected_and_a_clear_says_whether_it_found_one() -> None:
    kept = ChargingProfiles16()
    assert kept.set(request(0, "TxProfile", 10)) == {"status": "Rejected"}
    kept.set(request(1, "TxDefaultProfile", 6, profile_id=4))
    assert kept.clear({"id": 5}) == {"status": "Unknown"}
    assert kept.clear({"chargingProfilePurpose": "TxDefaultProfile"}) == {"status": "Accepted"}
    assert kept.limit_a(1, 3) is None
