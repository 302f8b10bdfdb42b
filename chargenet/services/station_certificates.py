"""A station's certificates: those its company's station CA signed for it (with their expiry), the CA certificates
installed on it, and a new CSR asked of it (OCPP Security Whitepaper; 2.0.1 blocks A and M).

The commands take `charge-points:write` on the station and go through `Edge.command` as every command does
(`station_commands`), worded for the station's generation (`domain.certificate_commands`). Installing and deleting
a certificate change what the station trusts, so each is audited: once the station answered, in a short unit of its
own (nobody waits on the station inside a unit). A PEM that is not a CA certificate is refused before anything is
sent, logged and audited as refused. Where the site relays its stations' CSRs to its upstream, that central system
manages their certificates and these commands are a `Conflict`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from cryptography import x509
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain import certificate_commands as wording
from chargenet.domain.certificate_requests import MAX_CSR_CHARACTERS, fingerprint
from chargenet.domain.scopes import Scope
from chargenet.edge.ocpp16.frames import Payload
from chargenet.edge.ocpp201.commands import Command
from chargenet.errors import Conflict, InvalidInput, NotFound
from chargenet.ports import StationCommands
from chargenet.services import audit
from chargenet.services.callers import Caller
from chargenet.services.charge_point_commands import checked, generation_of
from chargenet.services.reach import reachable_site, reachable_station, site_of
from chargenet.services.views import Instant, View
from chargenet.store.db import Transactions
from chargenet.store.models import Station, StationCertificate

log = logging.getLogger(__name__)

CsrHandling = Literal["sign", "relay"]
CSR_HANDLINGS: tuple[CsrHandling, ...] = ("sign", "relay")


class StationCertificateView(View):
    serial: str
    subject: str
    fingerprint: str
    issued_at: Instant
    not_after: Instant
    renewal_asked_at: Instant | None


class StationCertificates(View):
    items: list[StationCertificateView]  # the one expiring last first


def _view(row: StationCertificate) -> StationCertificateView:
    return StationCertificateView(
        serial=row.serial,
        subject=row.subject,
        fingerprint=row.fingerprint,
        issued_at=row.issued_at,
        not_after=row.not_after,
        renewal_asked_at=row.renewal_asked_at,
    )


async def list_certificates(session: AsyncSession, caller: Caller, station_id: str) -> StationCertificates:
    """The certificates signed for the station, the one expiring last first (a station renews about once a year)."""
    await reachable_station(session, caller, Scope.CHARGE_POINTS_READ, station_id)
    rows = await session.scalars(
        select(StationCertificate)
        .where(StationCertificate.station_id == station_id)
        .order_by(StationCertificate.not_after.desc())
    )
    return StationCertificates(items=[_view(row) for row in rows])


async def set_csr_handling(
    session: AsyncSession, caller: Caller, *, site_id: str, handling: str, now: datetime
) -> CsrHandling:
    """Whether the company's station CA signs the site's stations' CSRs (`sign`, the default) or they go to the
    site's upstream (`relay`, which needs one)."""
    site = await reachable_site(session, caller, Scope.SITES_WRITE, site_id)
    if handling not in CSR_HANDLINGS:
        raise InvalidInput("must be sign or relay", field="station-csrs")
    if handling == "relay" and site.upstream_url is None:
        raise InvalidInput("only a site with an upstream relays its stations' CSRs", field="station-csrs")
    if site.station_csrs != handling:
        before, site.station_csrs = site.station_csrs, handling
        site.version += 1
        detail = {"station CSRs": f"{before} -> {handling}"}
        await audit.record_change(session, caller, "site.station-csrs", site, now=now, detail=detail)
    return "relay" if handling == "relay" else "sign"


@dataclass(frozen=True, slots=True)
class _Target:
    station_id: str
    generation: str


async def _target(reading: Transactions, caller: Caller, station_id: str) -> _Target:
    async with reading() as session:
        row = await reachable_station(session, caller, Scope.CHARGE_POINTS_WRITE, station_id)
        site = await site_of(session, row)
        generation = await generation_of(session, row.id)
    if site.upstream_url is not None and site.station_csrs == "relay":
        raise Conflict(
            f"station {station_id}'s site relays its CSRs to its upstream central system, which manages the "
            "station's certificates: send this command from there"
        )
    return _Target(row.id, generation)


async def _send(edge: StationCommands, target: _Target, action: str, payload: Payload) -> Payload:
    command = checked(target.generation, Command(action, payload))
    return await edge.command(target.station_id, command.action, command.payload)


async def _audit(
    transactions: Transactions, caller: Caller, station_id: str, action: str, now: datetime, detail: dict[str, str]
) -> None:
    async with transactions() as session:
        station = await session.get(Station, station_id)
        if station is None:
            raise NotFound("station", station_id)
        await audit.record_change(session, caller, action, station, now=now, detail=detail)


def read_ca_certificate(pem: str) -> x509.Certificate:
    """The CA certificate an operator gives to install; `InvalidInput` for anything else."""
    if len(pem) > MAX_CSR_CHARACTERS:
        raise InvalidInput(f"is longer than OCPP's {MAX_CSR_CHARACTERS} characters", field="certificate")
    try:
        certificate = x509.load_pem_x509_certificate(pem.encode())
    except (ValueError, UnicodeEncodeError):
        raise InvalidInput("is not a PEM certificate", field="certificate") from None
    try:
        is_ca = certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        raise InvalidInput("is not a CA certificate (basicConstraints CA:TRUE)", field="certificate")
    return certificate


async def install_certificate(
    reading: Transactions,
    transactions: Transactions,
    edge: StationCommands,
    caller: Caller,
    *,
    station_id: str,
    certificate_type: str,
    certificate_pem: str,
    now: datetime,
) -> Payload:
    """InstallCertificate of a CA certificate; the station's answer (`status` Accepted, Rejected or Failed)."""
    target = await _target(reading, caller, station_id)
    try:
        certificate = read_ca_certificate(certificate_pem)
    except InvalidInput as refused:
        log.warning("certificate to install refused", extra={"fields": {"station": station_id, "reason": str(refused)}})
        detail = {"certificateType": certificate_type, "refused": str(refused)}
        await _audit(transactions, caller, station_id, "station.install-certificate", now, detail)
        raise
    action, payload = wording.install_certificate(target.generation, certificate_type, certificate_pem)
    answer = await _send(edge, target, action, payload)
    detail = {
        "certificateType": certificate_type,
        "fingerprint": fingerprint(certificate),
        "status": str(answer.get("status")),
    }
    await _audit(transactions, caller, station_id, "station.install-certificate", now, detail)
    return answer


async def delete_certificate(
    reading: Transactions,
    transactions: Transactions,
    edge: StationCommands,
    caller: Caller,
    *,
    station_id: str,
    hash_data: Payload,
    now: datetime,
) -> Payload:
    """DeleteCertificate of the certificate `hash_data` names (as GetInstalledCertificateIds gives it)."""
    target = await _target(reading, caller, station_id)
    action, payload = wording.delete_certificate(hash_data)
    answer = await _send(edge, target, action, payload)
    detail = {"serialNumber": str(hash_data.get("serialNumber")), "status": str(answer.get("status"))}
    await _audit(transactions, caller, station_id, "station.delete-certificate", now, detail)
    return answer


async def installed_certificate_ids(
    reading: Transactions, edge: StationCommands, caller: Caller, *, station_id: str, certificate_type: str
) -> Payload:
    """GetInstalledCertificateIds: the station's answer as it came (1.6's `certificateHashData`, 2.0.1's
    `certificateHashDataChain`)."""
    target = await _target(reading, caller, station_id)
    action, payload = wording.installed_certificate_ids(target.generation, certificate_type)
    return await _send(edge, target, action, payload)


async def request_csr(reading: Transactions, edge: StationCommands, caller: Caller, *, station_id: str) -> Payload:
    """Asks the station for a new CSR of its own certificate, which it sends in SignCertificate."""
    target = await _target(reading, caller, station_id)
    action, payload = wording.request_csr(target.generation)
    return await _send(edge, target, action, payload)
