"""A company's station CA (decisions.md "Security profiles"): made or imported by an owner or the local operator,
shown to whoever reads the company. The CA itself lives in the keys folder (`keys.station_ca`); the audit record
of its making is written in the caller's transaction, after the files: a CA written without its record is the
lesser fault, and the next `create` says the company has one."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.errors import NotFound
from chargenet.keys import KeyStore
from chargenet.keys import station_ca as files
from chargenet.services import audit
from chargenet.services.callers import Caller
from chargenet.services.reach import reachable_company, reachable_site
from chargenet.services.stations import require_owner
from chargenet.services.views import Instant, View


class StationCaView(View):
    company_id: str
    subject: str
    not_after: Instant
    fingerprint: str
    certificate: str  # PEM


def _view(company_id: str, summary: files.CaSummary) -> StationCaView:
    return StationCaView(
        company_id=company_id,
        subject=summary.subject,
        not_after=summary.not_after,
        fingerprint=summary.fingerprint,
        certificate=summary.certificate_pem,
    )


async def create_ca(
    session: AsyncSession, caller: Caller, keys: KeyStore, *, company_id: str, now: datetime
) -> StationCaView:
    company = await reachable_company(session, caller, Scope.SITES_WRITE, company_id)
    require_owner(caller, "a station CA")  # it decides which stations get in
    summary = files.create(keys, company.id, company.name, now=now)
    detail = {"station CA": "created", "fingerprint": summary.fingerprint}
    await audit.record_change(session, caller, "company.station_ca", company, now=now, detail=detail)
    return _view(company.id, summary)


async def import_ca(
    session: AsyncSession,
    caller: Caller,
    keys: KeyStore,
    *,
    company_id: str,
    certificate_pem: bytes,
    key_pem: bytes,
    now: datetime,
) -> StationCaView:
    company = await reachable_company(session, caller, Scope.SITES_WRITE, company_id)
    require_owner(caller, "a station CA")
    summary = files.import_ca(keys, company.id, certificate_pem, key_pem)
    detail = {"station CA": "imported", "fingerprint": summary.fingerprint}
    await audit.record_change(session, caller, "company.station_ca", company, now=now, detail=detail)
    return _view(company.id, summary)


async def import_upstream_ca(
    session: AsyncSession, caller: Caller, keys: KeyStore, *, site_id: str, certificate_pem: bytes, now: datetime
) -> StationCaView:
    """The CA of the site's upstream, trusted for the site's stations while the site relays their CSRs to it
    (decisions.md "Security profiles")."""
    site = await reachable_site(session, caller, Scope.SITES_WRITE, site_id)
    require_owner(caller, "a station CA")
    summary = files.import_upstream_ca(keys, site.id, certificate_pem)
    detail = {"upstream CA": "imported", "fingerprint": summary.fingerprint}
    await audit.record_change(session, caller, "site.upstream_ca", site, now=now, detail=detail)
    return _view(site.company_id, summary)


async def get_ca(session: AsyncSession, caller: Caller, keys: KeyStore, *, company_id: str) -> StationCaView:
    company = await reachable_company(session, caller, Scope.SITES_READ, company_id)
    summary = files.show(keys, company.id)
    if summary is None:
        raise NotFound("station CA", company.id)
    return _view(company.id, summary)
