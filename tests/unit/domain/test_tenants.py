from __future__ import annotations

import pytest

from chargenet.domain.tenants import (
    ConnectorAddress,
    StationLayout,
    charge_point_connector_ids,
    locate_connector,
    ocpp_connector_id,
)
from chargenet.errors import InvalidInput


def test_a_station_without_configuration_is_one_charge_point_named_after_it() -> None:
    layout = StationLayout("ST-1")
    assert layout.charge_point_ids == ["ST-1"]
    assert locate_connector(layout, 2) == ConnectorAddress("ST-1", 2)


def test_connector_zero_is_the_charge_point_itself() -> None:
    assert locate_connector(StationLayout("ST-1"), 0) == ConnectorAddress("ST-1", 0)


def test_several_charge_points_are_suffixed_and_share_the_connector_numbering() -> None:
    layout = StationLayout("ST-2", charge_points=3, connectors_per_charge_point=2)
    assert layout.charge_point_ids == ["ST-2-1", "ST-2-2", "ST-2-3"]
    assert locate_connector(layout, 1) == ConnectorAddress("ST-2-1", 1)
    assert locate_connector(layout, 2) == ConnectorAddress("ST-2-1", 2)
    assert locate_connector(layout, 3) == ConnectorAddress("ST-2-2", 1)
    assert locate_connector(layout, 6) == ConnectorAddress("ST-2-3", 2)


def test_ocpp_connector_id_inverts_locate_connector() -> None:
    layout = StationLayout("ST-2", charge_points=3, connectors_per_charge_point=2)
    for ocpp_id in range(0, 7):
        assert ocpp_connector_id(layout, locate_connector(layout, ocpp_id)) == ocpp_id


def test_commands_for_connector_zero_of_one_of_several_charge_points_name_each_of_its_connectors() -> None:
    layout = StationLayout("ST-2", charge_points=3, connectors_per_charge_point=2)
    assert charge_point_connector_ids(layout, ConnectorAddress("ST-2-2", 0)) == [3, 4]


def test_commands_for_connector_zero_of_a_single_charge_point_name_connector_zero() -> None:
    assert charge_point_connector_ids(StationLayout("ST-1"), ConnectorAddress("ST-1", 0)) == [0]


def test_commands_for_one_connector_name_its_ocpp_id() -> None:
    layout = StationLayout("ST-2", charge_points=3, connectors_per_charge_point=2)
    assert charge_point_connector_ids(layout, ConnectorAddress("ST-2-3", 1)) == [5]


def test_a_connector_beyond_the_station_is_refused() -> None:
    with pytest.raises(InvalidInput) as caught:
        locate_connector(StationLayout("ST-2", charge_points=2, connectors_per_charge_point=2), 5)
    assert caught.value.field == "connectorId"


def test_more_than_sixteen_connectors_are_refused() -> None:
    with pytest.raises(InvalidInput):
        locate_connector(StationLayout("ST-1"), 17)


def test_several_charge_points_need_a_connector_count() -> None:
    with pytest.raises(InvalidInput) as caught:
        StationLayout("ST-1", charge_points=2)
    assert caught.value.field == "connectors"


@pytest.mark.parametrize("station_id", ["", "has space", "a/b", "x" * 49, "-leading"])
def test_invalid_station_ids_are_refused_naming_the_value(station_id: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        StationLayout(station_id)
    assert repr(station_id) in caught.value.message
