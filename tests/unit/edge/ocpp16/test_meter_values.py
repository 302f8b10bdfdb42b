from __future__ import annotations

from datetime import UTC, datetime

from chargenet.edge.ocpp16.meter_values import Reported, reported

AT = "2026-07-01T12:00:00Z"
WHEN = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def test_a_value_without_measurand_is_the_energy_register_in_wh() -> None:
    assert reported([{"timestamp": AT, "sampledValue": [{"value": "12345"}]}]) == [Reported(WHEN, 12345, None)]


def test_kwh_are_converted_to_wh() -> None:
    values = [{"timestamp": AT, "sampledValue": [{"value": "12.3456", "unit": "kWh"}]}]
    assert reported(values)[0].energy_wh == 12346


def test_power_in_kw_is_read_beside_the_energy() -> None:
    sampled = [
        {"value": "7.4", "measurand": "Power.Active.Import", "unit": "kW"},
        {"value": "1000", "measurand": "Energy.Active.Import.Register"},
    ]
    assert reported([{"timestamp": AT, "sampledValue": sampled}]) == [Reported(WHEN, 1000, 7400.0)]


def test_values_per_phase_are_left_out_for_the_total() -> None:
    sampled = [{"value": "10", "phase": "L1"}, {"value": "30"}]
    assert reported([{"timestamp": AT, "sampledValue": sampled}])[0].energy_wh == 30


def test_a_value_measured_at_the_inlet_is_left_out() -> None:
    assert reported([{"timestamp": AT, "sampledValue": [{"value": "10", "location": "Inlet"}]}]) == []


def test_a_signed_value_is_left_out() -> None:
    assert reported([{"timestamp": AT, "sampledValue": [{"value": "ab==", "format": "SignedData"}]}]) == []


def test_a_meter_value_without_an_energy_register_is_no_sample() -> None:
    sampled = [{"value": "16", "measurand": "Current.Import", "unit": "A"}]
    assert reported([{"timestamp": AT, "sampledValue": sampled}]) == []


def test_a_value_that_is_no_number_is_left_out() -> None:
    for text in ("twelve", "NaN", "Infinity", ""):
        assert reported([{"timestamp": AT, "sampledValue": [{"value": text}]}]) == []


def test_a_negative_energy_is_left_out() -> None:
    assert reported([{"timestamp": AT, "sampledValue": [{"value": "-5"}]}]) == []


def test_a_time_without_an_offset_is_left_out() -> None:
    assert reported([{"timestamp": "2026-07-01T12:00:00", "sampledValue": [{"value": "1"}]}]) == []


def test_every_meter_value_of_a_message_is_a_sample() -> None:
    values = [
        {"timestamp": "2026-07-01T12:00:00+00:00", "sampledValue": [{"value": "1"}]},
        {"timestamp": "2026-07-01T14:01:00+02:00", "sampledValue": [{"value": "2"}]},
    ]
    assert [(r.at.astimezone(UTC).minute, r.energy_wh) for r in reported(values)] == [(0, 1), (1, 2)]


def test_no_meter_values_give_no_samples() -> None:
    assert reported(None) == []


def test_an_energy_beyond_any_meter_is_left_out() -> None:
    for text in ("1e16", "99999999999999999999999"):
        assert reported([{"timestamp": AT, "sampledValue": [{"value": text}]}]) == []


def test_a_power_beyond_any_meter_is_left_out_and_the_energy_kept() -> None:
    sampled = [{"value": "1e400", "measurand": "Power.Active.Import"}, {"value": "10"}]
    assert reported([{"timestamp": AT, "sampledValue": sampled}]) == [Reported(WHEN, 10, None)]


def test_a_time_with_no_instant_in_utc_is_left_out() -> None:
    assert reported([{"timestamp": "0001-01-01T00:00:00+05:00", "sampledValue": [{"value": "1"}]}]) == []


def test_a_unit_that_is_no_text_is_left_out() -> None:
    assert reported([{"timestamp": AT, "sampledValue": [{"value": "1", "unit": ["Wh"]}]}]) == []
