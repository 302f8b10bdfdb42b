"""Stations of a site and their charge points: create, change and delete (`sites:write`), read (`sites:read`).

Every change is written to the audit log in the caller's transaction (never a key: only whether one is set),
and bumps the station's `version`; a change made from an older version is refused as `StaleChange`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.generations import parse_versions, stored_versions
from chargenet.domain.scopes import Scope
from chargenet.domain.security_profiles import SecurityProfile, is_lowering, parse_profile
from chargenet.domain.tenants import StationLayout
from chargenet.errors import Conflict, Forbidden, InvalidInput
from chargenet.keys import CredentialCipher, SecretHasher
from chargenet.ports import StationCommands
from chargenet.services import audit
from chargenet.services.callers import Caller, LocalOperator, OperatorCaller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_site, reachable_station, site_filter
from chargenet.services.versions import check_version
from chargenet.services.views import Instant, View
from chargenet.store.models import (
    ChargePoint,
    Connector,
    EdgeTransaction,
    Meter,
    MeterSession,
    Site,
    Station,
    StationPresence,
)

AUTHORIZATION_KEY_LENGTH = (16, 40)


class StationView(View):
    id: str
    site_id: str
    charge_point_ids: list[str]
    connectors_per_charge_point: int | None
    security_profile: int
    serial_number: str | None  # the CN of its profile 3 certificate in place of its id
    upstream_password_set: bool
    ocpp_versions: list[str]  # the OCPP generations it may connect with (decisions.md §5)
    ocpp_version: str | None  # the one its latest connection speaks; None before it first connects
    last_refusal: str | None  # why the latest refused handshake was refused (`Refusal`'s value)
    last_refusal_at: Instant | None
    version: int
    created_at: Instant


def validate_authorization_key(password: str) -> str:
    low, high = AUTHORIZATION_KEY_LENGTH
    if not low <= len(password) <= high:
        raise InvalidInput(f"must be {low} to {high} characters, got {len(password)}", field="password")
    return password


async def create_station(
    session: AsyncSession,
    caller: Caller,
    hasher: SecretHasher,
    cipher: CredentialCipher,
    *,
    site_id: str,
    station_id: str,
    now: datetime,
    password: str | None = None,
    upstream_password: str | None = None,
    charge_points: int = 1,
    connectors: int | None = None,
    ocpp_versions: Sequence[str] | None = None,
) -> StationView:
    layout = StationLayout(station_id, charge_points, connectors)
    versions = stored_versions(ocpp_versions)
    await reachable_site(session, caller, Scope.SITES_WRITE, site_id)
    if await session.get(Station, station_id) is not None:
        raise Conflict(f"station {station_id!r} already exists")
    clashing = await session.scalar(select(ChargePoint.id).where(ChargePoint.id.in_(layout.charge_point_ids)))
    if clashing is not None:
        raise Conflict(f"charge point id {clashing!r} is already taken (charge point ids are unique service-wide)")
    row = Station(
        id=station_id,
        site_id=site_id,
        password_hash=hasher.hash(validate_authorization_key(password)) if password else None,
        upstream_password=cipher.encrypt(upstream_password) if upstream_password else None,
        security_profile=SecurityProfile.BASIC if password else SecurityProfile.NO_PASSWORD,
        charge_points=layout.charge_points,
        connectors_per_charge_point=layout.connectors_per_charge_point,
        ocpp_versions=versions,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    for ordinal, charge_point_id in enumerate(layout.charge_point_ids, start=1):
        session.add(ChargePoint(id=charge_point_id, station_id=station_id, site_id=site_id, ordinal=ordinal))
        for connector_id in range(1, (layout.connectors_per_charge_point or 0) + 1):
            session.add(Connector(charge_point_id=charge_point_id, connector_id=connector_id))
    await session.flush()
    detail = {
        "site": site_id,
        "charge points": str(layout.charge_points),
        "connectors per charge point": str(layout.connectors_per_charge_point or "as reported"),
        "security profile": str(row.security_profile),
        "OCPP versions": ", ".join(parse_versions(versions)),
    }
    if row.upstream_password is not None:
        detail["upstream login"] = "set"
    await audit.record_change(session, caller, "station.create", row, now=now, detail=detail)
    return _view(row)


async def update_station(
    session: AsyncSession,
    caller: Caller,
    hasher: SecretHasher,
    cipher: CredentialCipher,
    station_id: str,
    *,
    now: datetime,
    password: str | None = None,
    upstream_password: str | None = None,
    clear_password: bool = False,
    clear_upstream_password: bool = False,
    ocpp_versions: Sequence[str] | None = None,
    security_profile: int | str | None = None,
    serial_number: str | None = None,
    expected_version: int | None = None,
) -> StationView:
    """Set a new AuthorizationKey (`password`) or none (`clear_password`: security profile 0 from 1), a station's
    own upstream key or none (then the site's is used), the OCPP versions it may use, and its security profile.
    What is not given stays; nothing changes if any is refused. A profile may be raised by anyone who may change the
    station; lowering it (removing the key of a profile 1 station included) is an owner's act (`require_owner`)."""
    row = await reachable_station(session, caller, Scope.SITES_WRITE, station_id)
    check_version("station", row.id, row.version, expected_version)
    versions = stored_versions(ocpp_versions) if ocpp_versions is not None else row.ocpp_versions
    if password is not None:
        validate_authorization_key(password)
    current = SecurityProfile(row.security_profile)
    wanted = current if security_profile is None else parse_profile(security_profile)
    # Removing the key of a profile 1 station leaves it profile 0: a lowering, said so by the key's audit line.
    implicit = clear_password and security_profile is None and current is SecurityProfile.BASIC
    if implicit:
        wanted = SecurityProfile.NO_PASSWORD
    keyed = password is not None or (row.password_hash is not None and not clear_password)
    if wanted in (SecurityProfile.BASIC, SecurityProfile.BASIC_OVER_TLS) and not keyed:
        raise InvalidInput(f"profile {int(wanted)} needs an authorization key; set one", field="security-profile")
    if is_lowering(current, wanted):
        require_owner(caller, "lowering a station's security profile")
    serial = None if serial_number is None else validate_serial_number(serial_number)
    if upstream_password is not None and not upstream_password:
        raise InvalidInput("is empty; to remove the key, clear it instead", field="upstream-password")
    changed: list[str] = []
    if password is not None:
        changed.append("authorization key replaced" if row.password_hash is not None else "authorization key set")
        row.password_hash = hasher.hash(password)
    elif clear_password and row.password_hash is not None:
        changed.append("authorization key removed (security profile 0)")
        row.password_hash = None
    if upstream_password is not None:
        changed.append("upstream key replaced" if row.upstream_password is not None else "upstream key set")
        row.upstream_password = cipher.encrypt(upstream_password)
    elif clear_upstream_password and row.upstream_password is not None:
        changed.append("upstream key removed")
        row.upstream_password = None
    if versions != row.ocpp_versions:
        changed.append(f"OCPP versions {', '.join(parse_versions(versions))}")
        row.ocpp_versions = versions
    if wanted is not current and not implicit:
        lowered = " (lowered: the station must be reconfigured on site)" if is_lowering(current, wanted) else ""
        changed.append(f"security profile {int(current)} -> {int(wanted)}{lowered}")
    if wanted is not current:
        row.security_profile = int(wanted)
    if serial is not None and (serial or None) != row.serial_number:
        changed.append(f"serial number {serial}" if serial else "serial number removed")
        row.serial_number = serial or None
    if changed:
        row.version += 1
        await session.flush()
        await audit.record_change(
            session, caller, "station.update", row, now=now, detail={"changed": ", ".join(changed)}
        )
    return _view(row)


def validate_serial_number(text: str) -> str:
    """A serial number as a certificate's CN carries it (printable, at most 64 characters); "" removes it."""
    serial = text.strip()
    if len(serial) > 64 or not serial.isprintable():
        raise InvalidInput("must be printable text of at most 64 characters", field="serial-number")
    return serial


def require_owner(caller: Caller, what: str) -> None:
    """An owner's act (lowering a station's security profile, decisions.md "Security profiles"): a console owner
    or the local operator; an application or a console admin is `Forbidden`."""
    if isinstance(caller, LocalOperator):
        return
    if isinstance(caller, OperatorCaller) and caller.may_manage_operators:
        return
    raise Forbidden(f"{what} needs the owner role")


async def delete_station(
    session: AsyncSession,
    caller: Caller,
    station_id: str,
    *,
    now: datetime,
    stations: StationCommands | None = None,
    expected_version: int | None = None,
) -> None:
    """Delete a station that never charged: its charge points and connectors go with it. Refused (`Conflict`)
    while it is connected, has meters, or has any transaction, which stay the record of what was charged."""
    row = await reachable_station(session, caller, Scope.SITES_WRITE, station_id)
    check_version("station", row.id, row.version, expected_version)
    if stations is not None and stations.is_connected(station_id):
        raise Conflict(f"station {station_id} is connected; it can be deleted once it is not")
    if await session.scalar(select(Meter.id).where(Meter.station_id == station_id).limit(1)) is not None:
        raise Conflict(f"station {station_id} has meters; delete them first")
    charged = await session.scalar(
        select(EdgeTransaction.id).where(EdgeTransaction.station_id == station_id).limit(1)
    ) or await session.scalar(select(MeterSession.transaction_id).where(MeterSession.station_id == station_id).limit(1))
    if charged is not None:
        raise Conflict(f"station {station_id} has transactions, which are kept; it cannot be deleted")
    charge_point_ids = list(await session.scalars(select(ChargePoint.id).where(ChargePoint.station_id == station_id)))
    for connector in await session.scalars(select(Connector).where(Connector.charge_point_id.in_(charge_point_ids))):
        await session.delete(connector)
    for charge_point in await session.scalars(select(ChargePoint).where(ChargePoint.station_id == station_id)):
        await session.delete(charge_point)
    await session.flush()
    await audit.record_change(session, caller, "station.delete", row, now=now, detail={"site": row.site_id})
    await session.delete(row)
    await session.flush()


async def count_by_site(session: AsyncSession, site_ids: list[str]) -> dict[str, int]:
    """How many stations each of these sites has (for sites whose reach the caller has checked)."""
    if not site_ids:
        return {}
    query = select(Station.site_id, func.count()).where(Station.site_id.in_(site_ids)).group_by(Station.site_id)
    return {site_id: int(count) for site_id, count in (await session.execute(query)).all()}


async def get_station(session: AsyncSession, caller: Caller, station_id: str) -> StationView:
    row = await reachable_station(session, caller, Scope.SITES_READ, station_id)
    version = await session.scalar(select(StationPresence.ocpp_version).where(StationPresence.station_id == station_id))
    return _view(row, version)


async def list_stations(
    session: AsyncSession, caller: Caller, page: PageRequest, *, site_id: str | None = None
) -> Page[StationView]:
    """The stations on sites the caller reaches with `sites:read`, ordered by id."""
    query = (
        select(Station, StationPresence.ocpp_version)
        .join(Site, Site.id == Station.site_id)
        .outerjoin(StationPresence, StationPresence.station_id == Station.id)
        .where(site_filter(caller.reach(Scope.SITES_READ)))
        .order_by(Station.id)
        .limit(page.fetch)
    )
    if site_id is not None:
        query = query.where(Station.site_id == site_id)
    if page.after is not None:
        query = query.where(Station.id > page.after)
    views = [_view(row, version) for row, version in await session.execute(query)]
    return page.page(views, lambda station: station.id)


def _view(row: Station, ocpp_version: str | None = None) -> StationView:
    return StationView(
        id=row.id,
        site_id=row.site_id,
        charge_point_ids=row.layout().charge_point_ids,
        connectors_per_charge_point=row.connectors_per_charge_point,
        security_profile=row.security_profile,
        serial_number=row.serial_number,
        upstream_password_set=row.upstream_password is not None,
        ocpp_versions=list(parse_versions(row.ocpp_versions)),
        ocpp_version=ocpp_version,
        last_refusal=row.last_refusal,
        last_refusal_at=row.last_refusal_at,
        version=row.version,
        created_at=row.created_at,
    )
