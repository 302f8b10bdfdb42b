"""The tenant tree: company > site > station > charge point > connector (decisions.md §3 and §4).

A station is one OCPP endpoint. Without configuration it has one charge point whose id is the station id,
and OCPP connector ids map 1:1. With N > 1 charge points of M connectors each, the charge points are
`{stationId}-1` .. `{stationId}-N` and OCPP connector `(k-1)*M + j` is connector `j` of charge point `k`.
Connector 0 stands for the whole charge point (all of them, on a station with several).
"""

from __future__ import annotations

from dataclasses import dataclass

from chargenet.errors import InvalidInput
from chargenet.ids import STATION_ID_PATTERN

MAX_CONNECTORS_PER_CHARGE_POINT = 16
# A station is one OCPP endpoint; its charge points are created with it, so their number is bounded.
MAX_CHARGE_POINTS_PER_STATION = 100


@dataclass(frozen=True, slots=True)
class StationLayout:
    station_id: str
    charge_points: int = 1
    connectors_per_charge_point: int | None = None  # None: connectors appear as the station reports them

    def __post_init__(self) -> None:
        validate_station_id(self.station_id)
        if not 1 <= self.charge_points <= MAX_CHARGE_POINTS_PER_STATION:
            raise InvalidInput(
                f"{self.charge_points} is outside 1..{MAX_CHARGE_POINTS_PER_STATION}", field="charge-points"
            )
        if self.charge_points > 1 and self.connectors_per_charge_point is None:
            raise InvalidInput("a station with several charge points needs --connectors", field="connectors")
        per = self.connectors_per_charge_point
        if per is not None and not 1 <= per <= MAX_CONNECTORS_PER_CHARGE_POINT:
            raise InvalidInput(f"{per} is outside 1..{MAX_CONNECTORS_PER_CHARGE_POINT}", field="connectors")

    @property
    def charge_point_ids(self) -> list[str]:
        if self.charge_points == 1:
            return [self.station_id]
        return [f"{self.station_id}-{k}" for k in range(1, self.charge_points + 1)]


@dataclass(frozen=True, slots=True)
class ConnectorAddress:
    charge_point_id: str
    connector_id: int


def locate_connector(layout: StationLayout, ocpp_connector_id: int) -> ConnectorAddress:
    """Map an OCPP connector id reported by the station to (charge point, connector).

    Raises `InvalidInput` (field `connectorId`) for ids the station cannot have; the edge answers
    those with CALLERROR PropertyConstraintViolation.
    """
    if ocpp_connector_id < 0:
        raise InvalidInput(f"{ocpp_connector_id} is negative", field="connectorId")
    per = layout.connectors_per_charge_point
    if layout.charge_points == 1:
        limit = per if per is not None else MAX_CONNECTORS_PER_CHARGE_POINT
        if ocpp_connector_id > limit:
            raise InvalidInput(f"{ocpp_connector_id} is above this charge point's {limit} connectors", "connectorId")
        return ConnectorAddress(layout.station_id, ocpp_connector_id)
    assert per is not None  # guaranteed by StationLayout
    if ocpp_connector_id == 0:
        # Connector 0 of a multi-charge-point station is the station itself; it is kept on the first
        # charge point, and `station_wide` in the edge fans nothing out (decisions.md §4: no fan-out).
        return ConnectorAddress(layout.charge_point_ids[0], 0)
    k, j = divmod(ocpp_connector_id - 1, per)
    if k >= layout.charge_points:
        raise InvalidInput(
            f"{ocpp_connector_id} is above this station's {layout.charge_points * per} connectors", "connectorId"
        )
    return ConnectorAddress(f"{layout.station_id}-{k + 1}", j + 1)


def locate_evse_connector(layout: StationLayout, evse_id: int, connector_id: int | None) -> ConnectorAddress:
    """Map a 2.0.1 EVSE and connector to (charge point, connector): EVSE k is charge point k, its connector j is
    connector j, EVSE 0 is the whole station as connector 0 is in 1.6 (decisions.md §5, "Tree"). A connector left
    unsaid is the EVSE's first.

    Raises `InvalidInput` (field `evseId` or `connectorId`) for an EVSE or connector the station was never given.
    """
    if evse_id == 0:
        return ConnectorAddress(layout.charge_point_ids[0], 0)
    if not 1 <= evse_id <= layout.charge_points:
        raise InvalidInput(f"EVSE {evse_id} is not one of this station's {layout.charge_points}", field="evseId")
    connector = 1 if connector_id is None else connector_id
    limit = layout.connectors_per_charge_point or MAX_CONNECTORS_PER_CHARGE_POINT
    if not 1 <= connector <= limit:
        raise InvalidInput(f"connector {connector} is not one of this EVSE's {limit}", field="connectorId")
    return ConnectorAddress(layout.charge_point_ids[evse_id - 1], connector)


def ocpp_connector_id(layout: StationLayout, address: ConnectorAddress) -> int:
    """The inverse of `locate_connector`, for commands sent to the station."""
    if layout.charge_points == 1 or address.connector_id == 0:
        return address.connector_id
    assert layout.connectors_per_charge_point is not None
    k = layout.charge_point_ids.index(address.charge_point_id) + 1
    return (k - 1) * layout.connectors_per_charge_point + address.connector_id


def charge_point_connector_ids(layout: StationLayout, address: ConnectorAddress) -> list[int]:
    """The OCPP connector ids that a command for `address` names, one command each.

    Connector 0 of a charge point means that whole charge point. On a station with several charge points OCPP's
    connector 0 is the whole station, so there it is every connector of the charge point instead; on a station
    with one charge point it stays 0.
    """
    if address.connector_id != 0 or layout.charge_points == 1:
        return [ocpp_connector_id(layout, address)]
    per = layout.connectors_per_charge_point
    assert per is not None  # guaranteed by StationLayout
    return [ocpp_connector_id(layout, ConnectorAddress(address.charge_point_id, j)) for j in range(1, per + 1)]


def validate_station_id(station_id: str) -> str:
    if not STATION_ID_PATTERN.match(station_id):
        raise InvalidInput(
            f"{station_id!r} is not a valid station id (1-48 characters: letters, digits, '.', '_', ':', '-')",
            field="stationId",
        )
    return station_id


def validate_name(name: str, field: str = "name") -> str:
    stripped = name.strip()
    if not stripped or len(stripped) > 200:
        raise InvalidInput(f"{name!r} must be 1-200 characters", field=field)
    return stripped
