"""A site's TLS towards its upstream (domain.upstream_profiles): the security profile, the client certificate the
edge shows and the CA bundle it checks the upstream's server certificate against. Set and cleared with
`sites:write`, read with `sites:read`.

The files live in the keys folder (`keys.upstream_tls`); the site's row holds the profile and the client
certificate's summary, for the pages. The files are written before the row changes and the audit record is
written in the caller's transaction: files written without their record is the lesser fault, and the edge reads
them only for a site whose profile or summary says they are there."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain import upstream_profiles
from chargenet.domain.scopes import Scope
from chargenet.errors import InvalidInput
from chargenet.keys import KeyStore
from chargenet.keys import upstream_tls as files
from chargenet.services import audit
from chargenet.services.callers import Caller
from chargenet.services.reach import reachable_site
from chargenet.services.versions import check_version
from chargenet.services.views import Instant, View
from chargenet.store.models import Site


class ClientCertificateView(View):
    subject: str
    not_after: Instant
    fingerprint: str  # SHA-256 of the DER certificate, hex with colons


class UpstreamTlsView(View):
    site_id: str
    upstream_url: str | None
    security_profile: int
    client_certificate: ClientCertificateView | None
    ca_bundle_certificates: int | None  # None: the system's CA store checks the upstream's server certificate


def client_certificate_of(row: Site) -> ClientCertificateView | None:
    if row.upstream_client_subject is None or row.upstream_client_not_after is None:
        return None
    return ClientCertificateView(
        subject=row.upstream_client_subject,
        not_after=row.upstream_client_not_after,
        fingerprint=row.upstream_client_fingerprint or "",
    )


def settings_of(row: Site, *, url: str | None, profile: int | None) -> upstream_profiles.UpstreamTls:
    """The site's settings as the rules see them, with the upstream at `url` and the stored `profile`."""
    return upstream_profiles.UpstreamTls(
        profile=upstream_profiles.parse_upstream_profile(profile),
        url=url,
        client_certificate=row.upstream_client_subject is not None,
        ca_bundle=row.upstream_ca_certificates is not None,
    )


def _view(row: Site) -> UpstreamTlsView:
    return UpstreamTlsView(
        site_id=row.id,
        upstream_url=row.upstream_url,
        security_profile=int(upstream_profiles.parse_upstream_profile(row.upstream_security_profile)),
        client_certificate=client_certificate_of(row),
        ca_bundle_certificates=row.upstream_ca_certificates,
    )


async def get_upstream_tls(session: AsyncSession, caller: Caller, site_id: str) -> UpstreamTlsView:
    return _view(await reachable_site(session, caller, Scope.SITES_READ, site_id))


async def set_upstream_tls(
    session: AsyncSession,
    caller: Caller,
    keys: KeyStore,
    site_id: str,
    *,
    now: datetime,
    profile: int | None = None,
    client_certificate_pem: bytes | None = None,
    client_key_pem: bytes | None = None,
    ca_bundle_pem: bytes | None = None,
    expected_version: int | None = None,
) -> UpstreamTlsView:
    """Change what is given and keep the rest. Everything is checked (the files, and the profile rules with the
    site's URL) before anything is written, so a refused change leaves the site and its files as they were."""
    row = await reachable_site(session, caller, Scope.SITES_WRITE, site_id)
    check_version("site", row.name, row.version, expected_version)
    if (client_certificate_pem is None) != (client_key_pem is None):
        raise InvalidInput("a client certificate and its key are given together", field="client-key")
    new_profile = upstream_profiles.parse_upstream_profile(
        profile if profile is not None else row.upstream_security_profile
    )
    summary = None
    if client_certificate_pem is not None and client_key_pem is not None:
        summary = files.check_client_certificate(client_certificate_pem, client_key_pem, now=now)
    bundle_count = files.check_ca_bundle(ca_bundle_pem) if ca_bundle_pem is not None else None
    upstream_profiles.check(
        upstream_profiles.UpstreamTls(
            profile=new_profile,
            url=row.upstream_url,
            client_certificate=summary is not None or row.upstream_client_subject is not None,
            ca_bundle=bundle_count is not None or row.upstream_ca_certificates is not None,
        )
    )
    changed: list[str] = []
    detail: dict[str, str] = {"name": row.name}
    if client_certificate_pem is not None and client_key_pem is not None:
        summary = files.store_client_certificate(keys, row.id, client_certificate_pem, client_key_pem, now=now)
        row.upstream_client_subject = summary.subject[:300]
        row.upstream_client_not_after = summary.not_after
        row.upstream_client_fingerprint = summary.fingerprint
        changed.append("client certificate")
        detail["client certificate"] = summary.fingerprint
    if ca_bundle_pem is not None:
        row.upstream_ca_certificates = files.store_ca_bundle(keys, row.id, ca_bundle_pem)
        changed.append("CA bundle")
        detail["CA bundle"] = f"{row.upstream_ca_certificates} certificates"
    stored_profile = None if new_profile is upstream_profiles.DEFAULT else int(new_profile)
    if stored_profile != row.upstream_security_profile:
        row.upstream_security_profile = stored_profile
        changed.append("profile")
    if changed:
        row.version += 1
        await session.flush()
        detail["changed"] = ", ".join(changed)
        detail["upstream security profile"] = str(int(new_profile))
        await audit.record_change(session, caller, "site.upstream_tls", row, now=now, detail=detail)
    return _view(row)


async def clear_upstream_tls(
    session: AsyncSession,
    caller: Caller,
    keys: KeyStore,
    site_id: str,
    *,
    now: datetime,
    expected_version: int | None = None,
) -> UpstreamTlsView:
    """Back to profile 1 with the system's CA store: the site's TLS files are deleted."""
    row = await reachable_site(session, caller, Scope.SITES_WRITE, site_id)
    check_version("site", row.name, row.version, expected_version)
    files.remove(keys, row.id)
    had = (
        row.upstream_security_profile is not None
        or row.upstream_client_subject is not None
        or row.upstream_ca_certificates is not None
    )
    row.upstream_security_profile = None
    row.upstream_client_subject = None
    row.upstream_client_not_after = None
    row.upstream_client_fingerprint = None
    row.upstream_ca_certificates = None
    if had:
        row.version += 1
        await session.flush()
        detail = {"name": row.name, "changed": "cleared", "upstream security profile": "1"}
        await audit.record_change(session, caller, "site.upstream_tls", row, now=now, detail=detail)
    return _view(row)
