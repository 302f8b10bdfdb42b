from __future__ import annotations

import json

import pytest

from chargenet.domain.webhook_filters import MAX_IDS, EventFilter, check_filter, loaded, stored
from chargenet.errors import InvalidInput


def envelope(**payload: str) -> str:
    return json.dumps({"eventId": "e", "eventType": "Authorize", "payload": payload})


def test_a_webhook_without_a_filter_takes_every_event() -> None:
    assert EventFilter().takes_envelope(envelope(stationId="ST-9"))


def test_an_event_of_a_named_station_is_taken_and_others_are_not() -> None:
    wanted = EventFilter(stations=frozenset({"ST-1"}))
    assert wanted.takes_envelope(envelope(stationId="ST-1", chargePointId="ST-1-2"))
    assert not wanted.takes_envelope(envelope(stationId="ST-2", chargePointId="ST-2-1"))


def test_an_event_of_a_named_charge_point_is_taken_whatever_its_station() -> None:
    wanted = EventFilter(charge_points=frozenset({"ST-2-1"}))
    assert wanted.takes(station_id="ST-2", charge_point_id="ST-2-1")
    assert not wanted.takes(station_id="ST-2", charge_point_id="ST-2-2")


def test_an_event_naming_no_charge_point_is_taken_only_by_its_station() -> None:
    assert not EventFilter(charge_points=frozenset({"ST-2-1"})).takes_envelope(envelope(stationId="ST-2"))
    assert EventFilter(stations=frozenset({"ST-2"})).takes_envelope(envelope(stationId="ST-2"))


def test_ids_are_stored_without_blanks_or_repeats_and_read_back() -> None:
    stations, charge_points = check_filter([" ST-1", "ST-1", ""], ["ST-2-1"])
    assert (stations, charge_points) == (("ST-1",), ("ST-2-1",))
    assert loaded(stored(stations)) == {"ST-1"}
    assert stored(()) is None and loaded(None) == frozenset()


@pytest.mark.parametrize(
    ("stations", "field"), [(["a,b"], "stations"), (["x" * 65], "stations"), (["-ST"], "stations")]
)
def test_an_id_no_station_could_have_is_refused(stations: list[str], field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_filter(stations, [])
    assert refused.value.field == field


def test_the_filter_is_bounded() -> None:
    check_filter([f"ST-{i}" for i in range(MAX_IDS)], [f"CP-{i}" for i in range(MAX_IDS)])
    with pytest.raises(InvalidInput, match=f"at most {MAX_IDS}") as refused:
        check_filter([], [f"CP-{i}" for i in range(MAX_IDS + 1)])
    assert refused.value.field == "chargePoints"
