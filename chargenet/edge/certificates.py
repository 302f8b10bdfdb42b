"""Station certificates at run time: a station's CSR signed by its company's station CA, and renewals asked for.

`StationCertificates.sign` answers a SignCertificate of either generation: the CSR is checked and signed
(`domain.certificate_requests`), the signing is written with its audit record (the station as actor, face `ocpp`)
in one unit, and the chain to send in CertificateSigned is returned; the link answers Accepted and sends it after
that answer (`RpcConnection.after_answer`), outside any unit. A CSR refused is answered Rejected, logged with its
reason and counted (`refusals`, in `/metrics`); nothing is stored.

`CertificateRenewal` asks each station connected to this process whose latest certificate expires within the
renewal setting (`renew_before`, 30 days by default) for a new CSR, at most once a day per certificate; the station
then sends SignCertificate as above. Each process asks only the stations it holds, so two processes never ask the
same station and no lease is needed. It also counts, across the store, the stations whose latest certificate
expires within `EXPIRY_ALERT` (14 days) for `/metrics`.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.domain.certificate_commands import request_csr
from chargenet.domain.certificate_requests import (
    CertificateKind,
    CsrRefusal,
    CsrRefused,
    chain_pem,
    check_request,
    facts_of,
    sign,
)
from chargenet.edge.ocpp16.frames import Payload
from chargenet.edge.records import StationInfo
from chargenet.keys import KeyStore
from chargenet.keys.station_ca import signing_pair
from chargenet.store.db import Store
from chargenet.store.models import AuditRecord, StationCertificate
from chargenet.workers import LoopWorker

log = logging.getLogger(__name__)

RENEW_BEFORE = timedelta(days=30)
EXPIRY_ALERT = timedelta(days=14)
ASK_AGAIN_AFTER = timedelta(days=1)
RENEWAL_INTERVAL = 3600.0  # seconds between two looks at the certificates

SIGNED_ACTION = "station.certificate-signed"


class StationCertificates:
    def __init__(
        self, keys: KeyStore, clock: Clock, unit: Callable[[], AbstractAsyncContextManager[AsyncSession]]
    ) -> None:
        self._keys = keys
        self._clock = clock
        self._unit = unit
        self.refusals: Counter[str] = Counter()  # by `CsrRefusal` value
        self.signed = 0
        self.expiring_soon = 0  # stations whose latest certificate expires within EXPIRY_ALERT, at the last look

    async def sign(self, station: StationInfo, csr: str, kind: CertificateKind) -> str | None:
        """CertificateSigned's `certificateChain` for the station's CSR, the signing stored; None when refused."""
        fields: dict[str, object] = {"station": station.station_id}
        try:
            pair = signing_pair(self._keys, station.company_id)
            if pair is None:
                raise CsrRefused(CsrRefusal.NO_STATION_CA)
            request = check_request(csr, station.certificate_expectations, kind)
        except CsrRefused as refused:
            self.refusals[refused.refusal.value] += 1
            log.warning(
                f"certificate signing request refused: {refused.refusal.description}",
                extra={"fields": {**fields, "reason": refused.refusal.value}},
            )
            return None
        ca_certificate, ca_key = pair
        now = self._clock.now()
        certificate = sign(request, ca_certificate, ca_key, now=now)
        facts = facts_of(certificate)
        detail = {"serial": facts.serial, "fingerprint": facts.fingerprint, "not_after": facts.not_after.isoformat()}
        async with self._unit() as session:
            session.add(
                StationCertificate(
                    station_id=station.station_id,
                    serial=facts.serial,
                    subject=facts.subject[:300],
                    fingerprint=facts.fingerprint,
                    not_after=facts.not_after,
                    issued_at=now,
                )
            )
            session.add(
                AuditRecord(
                    company_id=station.company_id,
                    at=now,
                    actor=f"station {station.station_id}",
                    face="ocpp",
                    address=None,
                    action=SIGNED_ACTION,
                    object_type="station",
                    object_id=station.station_id,
                    detail=json.dumps(detail, sort_keys=True),
                )
            )
        self.signed += 1
        log.info("station certificate signed", extra={"fields": {**fields, **detail}})
        return chain_pem(certificate, ca_certificate)


def certificate_signed_logged(station_id: str, answer: Payload) -> None:
    """The station's answer to CertificateSigned: a station that refuses its new certificate keeps its old one."""
    status = answer.get("status")
    level = logging.INFO if status == "Accepted" else logging.WARNING
    log.log(level, f"CertificateSigned answered {status}", extra={"fields": {"station": station_id}})


class ConnectedStations(Protocol):
    """What the renewal needs of the edge: which stations this process holds, and a way to ask them."""

    def is_connected(self, station_id: str) -> bool: ...

    def generation_here(self, station_id: str) -> str | None: ...

    async def command_here(self, station_id: str, action: str, payload: Payload) -> Payload: ...


class CertificateRenewal(LoopWorker):
    name = "station-certificate-renewal"

    def __init__(
        self,
        store: Store,
        clock: Clock,
        stations: ConnectedStations,
        certificates: StationCertificates,
        *,
        renew_before: timedelta = RENEW_BEFORE,
        interval: float = RENEWAL_INTERVAL,
    ) -> None:
        super().__init__(clock, interval)
        self._store = store
        self._stations = stations
        self._certificates = certificates
        self._renew_before = renew_before

    async def run_once(self) -> None:
        now = self.clock.now()
        latest = (
            select(StationCertificate.station_id, func.max(StationCertificate.not_after).label("not_after"))
            .group_by(StationCertificate.station_id)
            .subquery()
        )
        async with self._store.read() as session:
            self._certificates.expiring_soon = int(
                await session.scalar(
                    select(func.count()).select_from(latest).where(latest.c.not_after <= now + EXPIRY_ALERT)
                )
                or 0
            )
            due = (
                await session.execute(
                    select(StationCertificate.station_id, StationCertificate.serial)
                    .join(
                        latest,
                        (latest.c.station_id == StationCertificate.station_id)
                        & (latest.c.not_after == StationCertificate.not_after),
                    )
                    .where(StationCertificate.not_after <= now + self._renew_before)
                    .where(
                        or_(
                            StationCertificate.renewal_asked_at.is_(None),
                            StationCertificate.renewal_asked_at <= now - ASK_AGAIN_AFTER,
                        )
                    )
                    .order_by(StationCertificate.not_after)
                )
            ).all()
        for station_id, serial in due:
            if self._stations.is_connected(station_id):
                await self._ask(station_id, serial, now)

    async def _ask(self, station_id: str, serial: str, now: datetime) -> None:
        generation = self._stations.generation_here(station_id)
        if generation is None:
            return
        action, payload = request_csr(generation)
        fields = {"station": station_id, "serial": serial}
        try:
            answer = await self._stations.command_here(station_id, action, payload)
        except Exception as exc:  # a station that does not answer is asked again at the next look
            log.warning("certificate renewal not asked", extra={"fields": {**fields, "error": str(exc)}})
            return
        async with self._store.transaction() as session:
            row = await session.get(StationCertificate, (station_id, serial))
            if row is not None:
                row.renewal_asked_at = now
        log.info("certificate renewal asked", extra={"fields": {**fields, "status": answer.get("status")}})
