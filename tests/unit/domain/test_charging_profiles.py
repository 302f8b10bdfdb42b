"""The profiles the edge sends for allowances, and their merge with an upstream's (decisions.md "Site power")."""

from __future__ import annotations

import json
from decimal import Decimal

from chargenet.domain.charging_profiles import (
    STACK_LEVEL,
    TX,
    TX_DEFAULT,
    Limit,
    clear_matches,
    clear_matches_201,
    merged_16,
    merged_201,
    profile_16,
    profile_201,
    profile_id,
)
from chargenet.edge.ocpp16 import frames as frames16
from chargenet.edge.ocpp16.frames import Call
from chargenet.edge.ocpp201 import frames as frames201


def upstream_profile(limits: list[float], unit: str = "A", stack_level: int = 3, purpose: str = TX) -> dict:
    periods = [{"startPeriod": 600 * i, "limit": limit} for i, limit in enumerate(limits)]
    profile = {
        "chargingProfileId": 77,
        "stackLevel": stack_level,
        "chargingProfilePurpose": purpose,
        "chargingProfileKind": "Absolute",
        "chargingSchedule": {"chargingRateUnit": unit, "chargingSchedulePeriod": periods},
    }
    if purpose == TX:
        profile["transactionId"] = 5
    return {"connectorId": 1, "csChargingProfiles": profile}


def upstream_profile_201(limits: list[float], unit: str = "A", purpose: str = TX) -> dict:
    periods = [{"startPeriod": 600 * i, "limit": limit, "numberPhases": 3} for i, limit in enumerate(limits)]
    profile = {
        "id": 77,
        "stackLevel": 3,
        "chargingProfilePurpose": purpose,
        "chargingProfileKind": "Absolute",
        "chargingSchedule": [
            {"id": 1, "chargingRateUnit": unit, "chargingSchedulePeriod": periods},
            {"id": 2, "chargingRateUnit": unit, "chargingSchedulePeriod": periods[:1]},
        ],
    }
    if purpose == TX:
        profile["transactionId"] = "upstream-named"
    return {"evseId": 1, "chargingProfile": profile}


def test_a_safe_default_is_a_tx_default_profile_per_connector_in_amperes_per_phase() -> None:
    request = profile_16(Limit(TX_DEFAULT, 2, 6.0, 3))
    assert request == {
        "connectorId": 2,
        "csChargingProfiles": {
            "chargingProfileId": profile_id(TX_DEFAULT, 2),
            "stackLevel": STACK_LEVEL,
            "chargingProfilePurpose": "TxDefaultProfile",
            "chargingProfileKind": "Relative",
            "chargingSchedule": {
                "chargingRateUnit": "A",
                "chargingSchedulePeriod": [{"startPeriod": 0, "limit": 6.0, "numberPhases": 3}],
            },
        },
    }


def test_an_allowance_is_a_tx_profile_naming_its_transaction() -> None:
    profile = profile_16(Limit(TX, 1, 12.7, 1, transaction_id=5))["csChargingProfiles"]
    assert profile["transactionId"] == 5
    assert profile["chargingSchedule"]["chargingSchedulePeriod"][0]["limit"] == 12.7


def test_on_201_the_profile_names_the_evse_and_the_stations_transaction_id() -> None:
    request = profile_201(Limit(TX, 1, 10.0, 3, transaction_id="abc"))
    assert request["evseId"] == 1
    assert request["chargingProfile"]["transactionId"] == "abc"
    assert request["chargingProfile"]["chargingSchedule"][0]["chargingSchedulePeriod"][0]["limit"] == 10.0


def test_each_purpose_and_connector_has_its_own_profile_id_so_a_new_one_replaces_the_last() -> None:
    ids = {profile_id(purpose, connector) for purpose in (TX, TX_DEFAULT) for connector in (1, 2)}
    assert len(ids) == 4


def test_an_upstreams_lower_limit_wins_over_the_edges() -> None:
    merged = merged_16(Limit(TX, 1, 16.0, 3, transaction_id=5), upstream_profile([10.0, 20.0]))
    assert merged is not None
    periods = merged["csChargingProfiles"]["chargingSchedule"]["chargingSchedulePeriod"]
    assert [p["limit"] for p in periods] == [10.0, 16.0]


def test_the_merge_replaces_the_edges_profile_rather_than_stacking_beside_it() -> None:
    merged = merged_16(Limit(TX, 1, 16.0, 3, transaction_id=5), upstream_profile([10.0]))
    assert merged is not None
    profile = merged["csChargingProfiles"]
    assert (profile["chargingProfileId"], profile["stackLevel"]) == (profile_id(TX, 1), STACK_LEVEL)


def test_an_upstream_profile_in_watts_is_capped_by_the_edges_limit_in_watts() -> None:
    merged = merged_16(Limit(TX, 1, 10.0, 3, transaction_id=5), upstream_profile([11_000.0, 4_000.0], unit="W"))
    assert merged is not None
    periods = merged["csChargingProfiles"]["chargingSchedule"]["chargingSchedulePeriod"]
    assert [p["limit"] for p in periods] == [6_900.0, 4_000.0]


def test_without_an_upstream_profile_the_edges_goes_alone_and_without_an_edge_limit_the_upstreams() -> None:
    edge = Limit(TX_DEFAULT, 1, 6.0, 1)
    upstream = upstream_profile([20.0], purpose=TX_DEFAULT)
    assert merged_16(edge, None) == profile_16(edge)
    alone = merged_16(None, upstream)
    assert (
        alone is not None
        and alone["csChargingProfiles"]["chargingSchedule"] == upstream["csChargingProfiles"]["chargingSchedule"]
    )
    assert merged_16(None, None) is None


def test_an_upstreams_profile_the_edge_does_not_limit_yet_takes_the_edges_id_so_the_edges_next_replaces_it() -> None:
    alone = merged_16(None, upstream_profile([20.0]))
    assert alone is not None
    inner = alone["csChargingProfiles"]
    assert (inner["chargingProfileId"], inner["stackLevel"]) == (profile_id(TX, 1), 0)
    assert inner["transactionId"] == 5
    alone_201 = merged_201(None, upstream_profile_201([20.0]))
    assert alone_201 is not None
    assert (alone_201["chargingProfile"]["id"], alone_201["chargingProfile"]["stackLevel"]) == (profile_id(TX, 1), 0)


def test_an_upstreams_profile_of_a_purpose_the_edge_never_limits_goes_as_the_upstream_sent_it() -> None:
    station_max = upstream_profile([20.0], purpose="ChargePointMaxProfile")
    assert merged_16(None, station_max) == station_max
    station_max_201 = upstream_profile_201([20.0], purpose="ChargingStationMaxProfile")
    assert merged_201(None, station_max_201) == station_max_201


def test_a_clear_request_matches_by_id_or_by_its_criteria() -> None:
    kept = upstream_profile([10.0])
    assert clear_matches({"id": 77}, 1, kept)
    assert not clear_matches({"id": 78}, 1, kept)
    assert clear_matches({"connectorId": 1, "chargingProfilePurpose": TX}, 1, kept)
    assert not clear_matches({"chargingProfilePurpose": TX_DEFAULT}, 1, kept)
    assert clear_matches({}, 1, kept)


def test_on_201_an_upstreams_lower_limit_wins_in_every_schedule_under_the_edges_id_and_transaction() -> None:
    merged = merged_201(Limit(TX, 1, 16.0, 3, transaction_id="tx-9"), upstream_profile_201([10.0, 20.0]))
    assert merged is not None
    profile = merged["chargingProfile"]
    assert [[p["limit"] for p in s["chargingSchedulePeriod"]] for s in profile["chargingSchedule"]] == [
        [10.0, 16.0],
        [10.0],
    ]
    assert (profile["id"], profile["stackLevel"], profile["transactionId"]) == (profile_id(TX, 1), STACK_LEVEL, "tx-9")
    assert merged["evseId"] == 1


def test_on_201_an_upstream_profile_in_watts_is_capped_by_the_edges_limit_in_watts() -> None:
    merged = merged_201(Limit(TX, 1, 10.0, 3, transaction_id="tx-9"), upstream_profile_201([11_000.0, 4_000.0], "W"))
    assert merged is not None
    periods = merged["chargingProfile"]["chargingSchedule"][0]["chargingSchedulePeriod"]
    assert [p["limit"] for p in periods] == [6_900.0, 4_000.0]


def test_on_201_without_an_upstream_profile_the_edges_goes_alone() -> None:
    edge = Limit(TX_DEFAULT, 1, 6.0, 1)
    assert merged_201(edge, None) == profile_201(edge)
    assert merged_201(None, None) is None


def test_on_201_a_clear_request_matches_by_id_or_by_its_criteria() -> None:
    kept = upstream_profile_201([10.0])
    assert clear_matches_201({"chargingProfileId": 77}, 1, kept)
    assert not clear_matches_201({"chargingProfileId": 78}, 1, kept)
    assert clear_matches_201({"chargingProfileCriteria": {"evseId": 1, "chargingProfilePurpose": TX}}, 1, kept)
    assert not clear_matches_201({"chargingProfileCriteria": {"evseId": 2}}, 1, kept)
    assert not clear_matches_201({"chargingProfileCriteria": {"stackLevel": 0}}, 1, kept)
    assert clear_matches_201({}, 1, kept)


def on_the_wire(payload: dict | None) -> dict:
    """The payload as a station's frame carries it (numbers with a fraction read as decimals, as the edge does)."""
    return json.loads(json.dumps(payload), parse_float=Decimal)


def test_the_profiles_pass_each_generations_schema() -> None:
    for amps in (0.0, 6.0, 12.7, 31.9):
        for purpose, transaction in ((TX_DEFAULT, None), (TX, 5)):
            limit = Limit(purpose, 1, amps, 3, transaction_id=transaction)
            frames16.check_call(Call("a", "SetChargingProfile", on_the_wire(profile_16(limit))))
            frames201.check_call(Call("a", "SetChargingProfile", on_the_wire(profile_201(limit))))
    merged = merged_16(Limit(TX, 1, 12.7, 3, transaction_id=5), upstream_profile([11_000.0], unit="W"))
    frames16.check_call(Call("a", "SetChargingProfile", on_the_wire(merged)))
    merged = merged_201(Limit(TX, 1, 12.7, 3, transaction_id="tx-9"), upstream_profile_201([11_000.0], unit="W"))
    frames201.check_call(Call("a", "SetChargingProfile", on_the_wire(merged)))
