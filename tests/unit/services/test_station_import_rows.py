"""Reading a bulk import: every bad row is named by its line, and a file with any bad row yields no rows."""

from __future__ import annotations

import pytest

from chargenet.errors import ImportClash, ImportRefused
from chargenet.services.station_import import read_csv, read_json_lines


def refusal(read: object, text: str) -> list[str]:
    with pytest.raises((ImportRefused, ImportClash)) as caught:
        read(text)  # type: ignore[operator]
    return [str(fault) for fault in caught.value.faults]


def test_csv_rows_take_the_apis_field_names_in_any_column_order() -> None:
    rows = read_csv("connectors,id,chargePoints,password\n2,ST-1,2,0123456789abcdef\n,ST-2,,\n")
    assert [(r.layout.station_id, r.layout.charge_points, r.layout.connectors_per_charge_point) for r in rows] == [
        ("ST-1", 2, 2),
        ("ST-2", 1, None),
    ]
    assert rows[0].password == "0123456789abcdef" and rows[1].password is None


def test_a_leading_byte_order_mark_is_skipped() -> None:
    assert [r.layout.station_id for r in read_csv("\ufeffid\nST-1\n")] == ["ST-1"]


def test_every_bad_csv_row_is_named_by_its_line() -> None:
    faults = refusal(read_csv, "id,password,chargePoints\nST-1,short,\nST 2,,\nST-3,,two\nST-4,,3\n")
    assert faults == [
        "line 2: password: must be 16 to 40 characters, got 5",
        "line 3: stationId: 'ST 2' is not a valid station id (1-48 characters: letters, digits, '.', '_', ':', '-')",
        "line 4: chargePoints: 'two' is not a whole number",
        "line 5: connectors: a station with several charge points needs --connectors",
    ]


def test_a_station_twice_in_one_file_is_refused_at_its_second_line() -> None:
    assert refusal(read_csv, "id\nST-1\nST-2\nST-1\n") == ["line 4: id: station 'ST-1' is also on line 2"]


def test_a_charge_point_id_made_twice_is_refused() -> None:
    # ST-1 with two charge points makes ST-1-1 and ST-1-2; a station named ST-1-2 would share an id.
    faults = refusal(read_csv, "id,chargePoints,connectors\nST-1,2,1\nST-1-2,,\n")
    assert faults == ["line 3: id: charge point id 'ST-1-2' is also made by line 2"]


def test_a_csv_without_an_id_column_or_with_extra_cells_is_refused() -> None:
    assert refusal(read_csv, "name\nST-1\n") == ["line 1: the first line names the columns and must include 'id'"]
    assert refusal(read_csv, "id\nST-1,surplus\n") == ["line 2: more cells than columns"]
    assert refusal(read_csv, "id,colour\nST-1,red\n") == [
        "line 2: colour: unknown field 'colour'; the fields are id, password, upstreamPassword, chargePoints, "
        "connectors"
    ]


def test_an_empty_file_is_refused() -> None:
    assert refusal(read_csv, "id\n") == ["input: there are no stations to import"]


def test_json_lines_rows_and_their_faults() -> None:
    rows = read_json_lines('{"id": "ST-1", "chargePoints": 2, "connectors": 2}\n\n{"id": "ST-2"}\n')
    assert [r.layout.station_id for r in rows] == ["ST-1", "ST-2"]
    faults = refusal(read_json_lines, '{"id": "ST-1"}\n[1]\nnot json\n{"id": 7}\n{"id": "ST-5", "connectors": true}\n')
    assert faults == [
        "line 2: not a JSON object",
        "line 3: not a JSON object",
        "line 4: id: must be a string",
        "line 5: connectors: must be a whole number",
    ]
