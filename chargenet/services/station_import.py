"""Bulk provisioning: a site's stations from a file (CSV or JSON lines) or an API call, all or none.

Every row is checked first (its own fields, duplicates within the file, clashes with stations and charge point ids
already in the store); any fault refuses the whole import, naming each bad row by its line, and nothing is written.
Then the rows go in with one multi-row statement per table, in the caller's transaction, so 10,000 stations take
a few statements rather than 10,000 units of work. One audit record names the import and its size.

Rows use the API's field names: `id`, `password`, `upstreamPassword`, `chargePoints`, `connectors`. In CSV the
first line names the columns (any order; `id` is required, the others optional, an empty cell means "not given").
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.domain.security_profiles import SecurityProfile
from chargenet.domain.tenants import StationLayout
from chargenet.errors import ImportClash, ImportRefused, InvalidInput, RowFault
from chargenet.keys import CredentialCipher, SecretHasher
from chargenet.services import audit
from chargenet.services.callers import Caller
from chargenet.services.reach import reachable_site
from chargenet.services.stations import validate_authorization_key
from chargenet.services.views import View
from chargenet.store.models import ChargePoint, Connector, Station

FIELDS = ("id", "password", "upstreamPassword", "chargePoints", "connectors")
MAX_ROWS = 100_000
MAX_FAULTS = 100  # a file with thousands of bad rows is reported by its first ones
_CHUNK = 500  # ids per IN (...) when looking for clashes: far below every backend's parameter limit


@dataclass(frozen=True, slots=True)
class StationRow:
    line: int  # where the row came from, for the refusal: the file's line, or the list's position from 1
    layout: StationLayout
    password: str | None = None
    upstream_password: str | None = None


class ImportResult(View):
    site_id: str
    created: int
    station_ids: list[str]


class _Faults:
    def __init__(self) -> None:
        self.found: list[RowFault] = []

    def add(self, line: int, field: str | None, message: str) -> None:
        if len(self.found) < MAX_FAULTS:
            self.found.append(RowFault(line, field, message))

    def raise_any(self, error: type[ImportRefused | ImportClash] = ImportRefused) -> None:
        if self.found:
            raise error(self.found)


def _optional_text(value: object, field: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInput("must be a string", field=field)
    return value


def _optional_int(value: object, field: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise InvalidInput("must be a whole number", field=field)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value.strip()) <= 6:
        return int(value.strip())
    raise InvalidInput(f"{value!r} is not a whole number", field=field)


def _row(line: int, values: Mapping[str, object]) -> StationRow:
    if "" in values:  # the reader's own finding: the line could not be read as a row at all
        raise InvalidInput(str(values[""]))
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0]!r}; the fields are {', '.join(FIELDS)}", field=unknown[0])
    station_id = _optional_text(values.get("id"), "id")
    if station_id is None:
        raise InvalidInput("is required", field="id")
    password = _optional_text(values.get("password"), "password")
    if password is not None:
        validate_authorization_key(password)
    charge_points = _optional_int(values.get("chargePoints"), "chargePoints")
    layout = StationLayout(
        station_id,
        1 if charge_points is None else charge_points,
        _optional_int(values.get("connectors"), "connectors"),
    )
    return StationRow(line, layout, password, _optional_text(values.get("upstreamPassword"), "upstreamPassword"))


def rows_of(values: Iterable[tuple[int, Mapping[str, object]]]) -> list[StationRow]:
    """Checked rows from (line, fields) pairs; every row's fault is collected, then all are raised together."""
    faults = _Faults()
    rows: list[StationRow] = []
    for line, fields in values:
        if len(rows) + len(faults.found) >= MAX_ROWS:
            faults.add(line, None, f"an import holds at most {MAX_ROWS:,} stations")
            break
        try:
            rows.append(_row(line, fields))
        except InvalidInput as fault:
            faults.add(line, fault.field, fault.detail)
    faults.raise_any()
    seen_stations: dict[str, int] = {}
    seen_points: dict[str, int] = {}
    for row in rows:
        first = seen_stations.setdefault(row.layout.station_id, row.line)
        if first != row.line:
            faults.add(row.line, "id", f"station {row.layout.station_id!r} is also on line {first}")
            continue  # its charge points clash too, for the same reason
        for point in row.layout.charge_point_ids:
            earlier = seen_points.setdefault(point, row.line)
            if earlier != row.line:
                faults.add(row.line, "id", f"charge point id {point!r} is also made by line {earlier}")
    # Each row is sound on its own; together they would make one station (or charge point) twice: a clash (409),
    # like a row that names a station the store already holds.
    faults.raise_any(ImportClash)
    if not rows:
        raise ImportRefused([RowFault(0, None, "there are no stations to import")])
    return rows


def read_csv(text: str) -> list[StationRow]:
    reader = csv.DictReader(io.StringIO(text.removeprefix("\ufeff")), strict=True)
    header = reader.fieldnames or []
    if "id" not in header:
        raise ImportRefused([RowFault(1, None, "the first line names the columns and must include 'id'")])
    if len(set(header)) != len(header) or "" in header:
        raise ImportRefused([RowFault(1, None, "every column needs a name of its own")])

    def values() -> Iterable[tuple[int, Mapping[str, object]]]:
        try:
            for record in reader:
                extra = record.pop(None, None)
                if extra:
                    yield reader.line_num, {**record, "": "more cells than columns"}
                else:
                    yield reader.line_num, {k: (v or "").strip() for k, v in record.items()}
        except csv.Error as exc:
            yield reader.line_num, {"": f"not CSV: {exc}"}

    return rows_of(values())


def read_json_lines(text: str) -> list[StationRow]:
    def values() -> Iterable[tuple[int, Mapping[str, object]]]:
        for line, raw in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except ValueError:
                value = None
            if not isinstance(value, dict):
                yield line, {"": "not a JSON object"}
            else:
                yield line, value

    return rows_of(values())


async def import_stations(
    session: AsyncSession,
    caller: Caller,
    hasher: SecretHasher,
    cipher: CredentialCipher,
    *,
    site_id: str,
    rows: Sequence[StationRow],
    now: datetime,
) -> ImportResult:
    """Create every row's station, with its charge points and connectors, under `site_id`; or raise and create
    nothing (the caller's transaction is rolled back with the exception)."""
    site = await reachable_site(session, caller, Scope.SITES_WRITE, site_id)
    faults = _Faults()
    by_station = {row.layout.station_id: row for row in rows}
    existing: set[int] = set()
    for chunk in _chunks(list(by_station)):
        for taken in await session.scalars(select(Station.id).where(Station.id.in_(chunk))):
            existing.add(by_station[taken].line)
            faults.add(by_station[taken].line, "id", f"station {taken!r} already exists")
    by_point = {point: row for row in rows if row.line not in existing for point in row.layout.charge_point_ids}
    for chunk in _chunks(list(by_point)):
        for taken in await session.scalars(select(ChargePoint.id).where(ChargePoint.id.in_(chunk))):
            faults.add(by_point[taken].line, "id", f"charge point id {taken!r} is already taken")
    faults.raise_any(ImportClash)  # the rows are sound; the store's state refuses them (409)
    stations, points, connectors = [], [], []
    for row in rows:
        layout = row.layout
        stations.append(
            {
                "id": layout.station_id,
                "site_id": site.id,
                "password_hash": hasher.hash(row.password) if row.password else None,
                "upstream_password": cipher.encrypt(row.upstream_password) if row.upstream_password else None,
                # As one station created alone: profile 1 with a key, 0 without.
                "security_profile": SecurityProfile.BASIC if row.password else SecurityProfile.NO_PASSWORD,
                "charge_points": layout.charge_points,
                "connectors_per_charge_point": layout.connectors_per_charge_point,
                "version": 1,
                "created_at": now,
            }
        )
        for ordinal, point in enumerate(layout.charge_point_ids, start=1):
            points.append({"id": point, "station_id": layout.station_id, "site_id": site.id, "ordinal": ordinal})
            connectors += [
                {"charge_point_id": point, "connector_id": n}
                for n in range(1, (layout.connectors_per_charge_point or 0) + 1)
            ]
    await session.execute(insert(Station), stations)
    await session.execute(insert(ChargePoint), points)
    if connectors:
        await session.execute(insert(Connector), connectors)
    await audit.record_change(session, caller, "station.import", site, now=now, detail={"stations": str(len(rows))})
    return ImportResult(site_id=site.id, created=len(rows), station_ids=[row.layout.station_id for row in rows])


def _chunks(items: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]
