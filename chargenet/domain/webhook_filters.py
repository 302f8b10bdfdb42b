"""Which events a webhook wants, beyond its site and event types: those of some stations and/or charge points.

Rules:
- Rule 1: a webhook that names no station and no charge point takes every event of its site and types.
- Rule 2: otherwise it takes an event whose `stationId` is one it names, or whose `chargePointId` is one it names;
  an event that names neither (an Authorize of a station it does not name, without a charge point) is not for it.
- Rule 3: an event not for the webhook never enters its lanes: the lane filler skips it, so it cannot hold a lane
  back, and a recovery skips it too.
- Rule 4: at most `MAX_IDS` stations and `MAX_IDS` charge points; an id is written as station and charge point ids
  are (`ID_PATTERN`: a letter or digit, then letters, digits, '.', '_', ':' or '-', 64 characters at most).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from chargenet.errors import InvalidInput

MAX_IDS = 50
MAX_ID_LENGTH = 64
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:\-]{0,63}")


@dataclass(frozen=True, slots=True)
class EventFilter:
    stations: frozenset[str] = frozenset()
    charge_points: frozenset[str] = frozenset()

    @property
    def takes_all(self) -> bool:
        return not self.stations and not self.charge_points

    def takes(self, station_id: str | None, charge_point_id: str | None) -> bool:
        """Rules 1 and 2."""
        if self.takes_all:
            return True
        return (station_id is not None and station_id in self.stations) or (
            charge_point_id is not None and charge_point_id in self.charge_points
        )

    def takes_envelope(self, body: str) -> bool:
        """Rules 1 and 2 for an event envelope as stored (JSON); read only when the filter names something."""
        return self.takes_all or self.takes(*subject_of(body))


def subject_of(body: str) -> tuple[str | None, str | None]:
    """The station and charge point an event envelope (as stored, JSON) is about."""
    payload = json.loads(body).get("payload") or {}
    station, charge_point = payload.get("stationId"), payload.get("chargePointId")
    return (station if isinstance(station, str) else None, charge_point if isinstance(charge_point, str) else None)


def check_ids(values: Iterable[str], field: str) -> tuple[str, ...]:
    """Station or charge point ids as stored: stripped, without blanks or repeats, in the order given."""
    ids: list[str] = []
    for value in values:
        value = value.strip()
        if not value:
            continue
        if not ID_PATTERN.fullmatch(value):
            raise InvalidInput(f"{value[:MAX_ID_LENGTH]!r} is not a station or charge point id", field=field)
        if value not in ids:
            ids.append(value)
    if len(ids) > MAX_IDS:
        raise InvalidInput(f"at most {MAX_IDS}", field=field)
    return tuple(ids)


def check_filter(stations: Iterable[str], charge_points: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The filter's stations and charge points as stored (Rule 4)."""
    return check_ids(stations, "stations"), check_ids(charge_points, "chargePoints")


def stored(ids: tuple[str, ...]) -> str | None:
    """Ids as a column keeps them: comma-separated, None for none."""
    return ",".join(ids) or None


def loaded(column: str | None) -> frozenset[str]:
    return frozenset(column.split(",")) if column else frozenset()
