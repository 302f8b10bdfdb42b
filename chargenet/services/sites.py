"""Sites of a company: create and change them (`sites:write`), read them (`sites:read`).

Every change is written to the audit log in the caller's transaction, whichever face asked, and bumps the
site's `version`; a change made from an older version (`expected_version`) is refused as `StaleChange`."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from urllib.parse import urlsplit

from pydantic import Field
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain import upstream_profiles
from chargenet.domain.generations import parse_upstream_versions, stored_upstream_versions
from chargenet.domain.scopes import Scope
from chargenet.domain.tenants import validate_name
from chargenet.domain.upstream_profiles import parse_upstream_profile
from chargenet.errors import Conflict, InvalidInput, NotFound
from chargenet.ids import new_id
from chargenet.keys import CredentialCipher
from chargenet.services import audit, upstream_tls
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_company, reachable_site, site_filter
from chargenet.services.upstream_tls import ClientCertificateView, client_certificate_of
from chargenet.services.versions import check_version
from chargenet.services.views import Instant, View, like_escaped
from chargenet.store.db import LONG
from chargenet.store.models import (
    AuthCacheEntry,
    Circuit,
    GridMeter,
    Group,
    LocalAuthEntry,
    Meter,
    Site,
    Station,
    StationPresence,
    Webhook,
)


class SiteView(View):
    id: str
    company_id: str
    name: str
    upstream_url: str | None
    upstream_password_set: bool
    upstream_ocpp_versions: list[str]  # the OCPP generations its upstream takes (decisions.md §4)
    upstream_security_profile: int  # of the link to the upstream (domain.upstream_profiles)
    upstream_client_certificate: ClientCertificateView | None  # the one the edge shows the upstream
    upstream_ca_certificates: int | None  # in its CA bundle for the upstream's server certificate; None: the system's
    version: int
    created_at: Instant


def _view(row: Site) -> SiteView:
    return SiteView(
        id=row.id,
        company_id=row.company_id,
        name=row.name,
        upstream_url=row.upstream_url,
        upstream_password_set=row.upstream_password is not None,
        upstream_ocpp_versions=list(parse_upstream_versions(row.upstream_ocpp_versions)),
        upstream_security_profile=int(parse_upstream_profile(row.upstream_security_profile)),
        upstream_client_certificate=client_certificate_of(row),
        upstream_ca_certificates=row.upstream_ca_certificates,
        version=row.version,
        created_at=row.created_at,
    )


def url_shown(url: str | None) -> str:
    """An upstream URL as the audit log may hold it: without any user name or password written into it."""
    if url is None:
        return "none"
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def validate_upstream_url(url: str) -> str:
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number or out of range
    except ValueError:
        raise InvalidInput(f"{url!r} has an invalid port", field="upstream-url") from None
    if parts.scheme not in ("ws", "wss") or not parts.hostname or parts.query or parts.fragment:
        raise InvalidInput(f"{url!r} is not a ws:// or wss:// URL without query or fragment", field="upstream-url")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput("holds a user name or password; give the password in its own field", field="upstream-url")
    return url.rstrip("/")


async def create_site(
    session: AsyncSession,
    caller: Caller,
    cipher: CredentialCipher,
    *,
    company_id: str,
    name: str,
    now: datetime,
    upstream_url: str | None = None,
    upstream_password: str | None = None,
    upstream_ocpp_versions: Sequence[str] | None = None,
) -> SiteView:
    """A new site of `company_id`; needs `sites:write` on the company itself. Its upstream takes
    `upstream_ocpp_versions`, by default 1.6 only."""
    await reachable_company(session, caller, Scope.SITES_WRITE, company_id)
    row = Site(
        id=new_id("site"),
        company_id=company_id,
        name=validate_name(name),
        upstream_url=validate_upstream_url(upstream_url) if upstream_url else None,
        upstream_password=cipher.encrypt(upstream_password) if upstream_password else None,
        upstream_ocpp_versions=stored_upstream_versions(upstream_ocpp_versions or ()),
        created_at=now,
    )
    session.add(row)
    await session.flush()
    detail = {"name": row.name, "upstream": url_shown(row.upstream_url)}
    if row.upstream_password is not None:
        detail["upstream login"] = "set"
    if row.upstream_ocpp_versions is not None:
        detail["upstream OCPP versions"] = row.upstream_ocpp_versions
    await audit.record_change(session, caller, "site.create", row, now=now, detail=detail)
    return _view(row)


async def update_site(
    session: AsyncSession,
    caller: Caller,
    cipher: CredentialCipher,
    site_id: str,
    *,
    now: datetime,
    name: str | None = None,
    upstream_url: str | None = None,
    remove_upstream: bool = False,
    upstream_password: str | None = None,
    clear_upstream_password: bool = False,
    upstream_ocpp_versions: Sequence[str] | None = None,
    upstream_security_profile: int | None = None,
    expected_version: int | None = None,
) -> SiteView:
    """Change what is given and keep the rest: `remove_upstream` drops the upstream URL and its password,
    `clear_upstream_password` only the password (`upstream_password` sets a new one). Everything is checked
    before anything changes, so a refused change leaves the site as it was."""
    row = await reachable_site(session, caller, Scope.SITES_WRITE, site_id)
    check_version("site", row.name, row.version, expected_version)
    new_name = validate_name(name) if name is not None else row.name
    new_url = row.upstream_url
    if remove_upstream:
        new_url = None
    elif upstream_url is not None:
        new_url = validate_upstream_url(upstream_url)
    new_profile = row.upstream_security_profile
    if upstream_security_profile is not None:
        wanted = upstream_profiles.parse_upstream_profile(upstream_security_profile)
        new_profile = None if wanted is upstream_profiles.DEFAULT else int(wanted)
    upstream_profiles.check(upstream_tls.settings_of(row, url=new_url, profile=new_profile))
    if upstream_password is not None and not upstream_password:
        raise InvalidInput("is empty; to remove the password, clear it instead", field="upstream-password")
    new_versions = row.upstream_ocpp_versions
    if upstream_ocpp_versions is not None:
        new_versions = stored_upstream_versions(upstream_ocpp_versions)
    changed: list[str] = []
    if new_name != row.name:
        changed.append("name")
        row.name = new_name
    if new_url != row.upstream_url:
        changed.append("upstream URL")
        row.upstream_url = new_url
    if (remove_upstream or clear_upstream_password) and upstream_password is None:
        if row.upstream_password is not None:
            changed.append("upstream password removed")
            row.upstream_password = None
    elif upstream_password is not None:
        changed.append("upstream password replaced" if row.upstream_password is not None else "upstream password set")
        row.upstream_password = cipher.encrypt(upstream_password)
    if new_versions != row.upstream_ocpp_versions:
        changed.append("upstream OCPP versions")
        row.upstream_ocpp_versions = new_versions
    if new_profile != row.upstream_security_profile:
        changed.append("upstream security profile")
        row.upstream_security_profile = new_profile
    if changed:
        row.version += 1
        await session.flush()
        detail = {"name": row.name, "changed": ", ".join(changed), "upstream": url_shown(row.upstream_url)}
        if "upstream OCPP versions" in changed:
            detail["upstream OCPP versions"] = ", ".join(parse_upstream_versions(row.upstream_ocpp_versions))
        if "upstream security profile" in changed:
            detail["upstream security profile"] = str(int(parse_upstream_profile(row.upstream_security_profile)))
        await audit.record_change(session, caller, "site.update", row, now=now, detail=detail)
    return _view(row)


async def delete_site(
    session: AsyncSession, caller: Caller, site_id: str, *, now: datetime, expected_version: int | None = None
) -> None:
    """Delete a site that holds nothing: refused (`Conflict`, naming what is left) while it has stations,
    meters, circuits, webhooks or groups anchored at it, each of which is deleted or moved on its own first, so that
    deleting a site never takes a station's history or a partner's endpoint with it silently. Its local
    authorization list and the upstream's cached answers go with it."""
    row = await reachable_site(session, caller, Scope.SITES_WRITE, site_id)
    check_version("site", row.name, row.version, expected_version)
    left = []
    for noun, model in (
        ("stations", Station),
        ("meters", Meter),
        ("grid meters", GridMeter),
        ("circuits", Circuit),
        ("webhooks", Webhook),
        ("groups", Group),
    ):
        if await session.scalar(select(model.id).where(model.site_id == site_id).limit(1)) is not None:
            left.append(noun)
    if left:
        raise Conflict(f"site {site_id} still has {_listed(left)}; delete them first")
    await session.execute(delete(LocalAuthEntry).where(LocalAuthEntry.site_id == site_id).execution_options(**LONG))
    await session.execute(delete(AuthCacheEntry).where(AuthCacheEntry.site_id == site_id).execution_options(**LONG))
    await audit.record_change(session, caller, "site.delete", row, now=now, detail={"name": row.name})
    await session.delete(row)
    await session.flush()


def _listed(nouns: list[str]) -> str:
    return nouns[0] if len(nouns) == 1 else ", ".join(nouns[:-1]) + " and " + nouns[-1]


async def get_site(session: AsyncSession, caller: Caller, site_id: str) -> SiteView:
    return _view(await reachable_site(session, caller, Scope.SITES_READ, site_id))


async def list_sites(
    session: AsyncSession,
    caller: Caller,
    page: PageRequest,
    *,
    company_id: str | None = None,
    name_contains: str | None = None,
    upstream: bool | None = None,
) -> Page[SiteView]:
    """The sites the caller reaches with `sites:read`, ordered by id; `name_contains` narrows to names holding
    it (any case), `upstream` to sites with (True) or without (False) an upstream."""
    query = select(Site).where(site_filter(caller.reach(Scope.SITES_READ))).order_by(Site.id).limit(page.fetch)
    if company_id is not None:
        query = query.where(Site.company_id == company_id)
    if name_contains:
        query = query.where(Site.name.ilike(f"%{like_escaped(name_contains)}%", escape="\\"))
    if upstream is not None:
        query = query.where(Site.upstream_url.is_not(None) if upstream else Site.upstream_url.is_(None))
    if page.after is not None:
        query = query.where(Site.id > page.after)
    rows = [_view(row) for row in await session.scalars(query)]
    return page.page(rows, lambda site: site.id)


class SiteContents(View):
    """How much a site holds, as its page counts it: each count as the caller reaches that kind on the site (one
    it may not read counts 0), so a site's page can say "N" and link to the list of all N."""

    stations: int
    meters: int
    webhooks: int
    local_list_entries: int
    upstream_links_up: int = Field(description="connected stations whose link to the site's upstream is up")
    upstream_links_down: int = Field(description="connected stations whose link to the site's upstream is down")


async def site_contents(session: AsyncSession, caller: Caller, site_id: str) -> SiteContents:
    """The counts of the site's stations, meters, webhooks, local list entries and upstream links, if the caller's
    `sites:read` reaches the site (`NotFound` else); one indexed count each, whatever the site's size."""
    await reachable_site(session, caller, Scope.SITES_READ, site_id)
    stations = await session.scalar(select(func.count()).select_from(Station).where(Station.site_id == site_id))
    entries = await session.scalar(
        select(func.count()).select_from(LocalAuthEntry).where(LocalAuthEntry.site_id == site_id)
    )
    links = {True: 0, False: 0}
    rows = await session.execute(
        select(StationPresence.upstream_connected, func.count())
        .join(Station, Station.id == StationPresence.station_id)
        .join(Site, Site.id == Station.site_id)
        .where(
            Station.site_id == site_id,
            site_filter(caller.reach(Scope.CHARGE_POINTS_READ)),
            StationPresence.connected.is_(True),
            StationPresence.upstream_connected.is_not(None),
        )
        .group_by(StationPresence.upstream_connected)
    )
    for up, number in rows:
        links[bool(up)] = int(number)
    return SiteContents(
        stations=int(stations or 0),
        meters=await _count_reached(session, caller, Meter, Scope.METERS_READ, site_id),
        webhooks=await _count_reached(session, caller, Webhook, Scope.WEBHOOKS_READ, site_id),
        local_list_entries=int(entries or 0),
        upstream_links_up=links[True],
        upstream_links_down=links[False],
    )


async def _count_reached(
    session: AsyncSession, caller: Caller, model: type[Meter] | type[Webhook], scope: Scope, site_id: str
) -> int:
    """How many of the site's meters or webhooks the caller's `scope` reaches."""
    found = await session.scalar(
        select(func.count())
        .select_from(model)
        .join(Site, Site.id == model.site_id)
        .where(model.site_id == site_id, site_filter(caller.reach(scope)))
    )
    return int(found or 0)


async def site_names(session: AsyncSession, caller: Caller, site_ids: Collection[str]) -> dict[str, str]:
    """The names of those of these sites the caller reaches with `sites:read`, by id (an id it does not reach is
    left out), for a table that shows a site's name where a person reads it."""
    wanted = sorted({site_id for site_id in site_ids if site_id})
    if not wanted:
        return {}
    rows = await session.execute(
        select(Site.id, Site.name).where(Site.id.in_(wanted), site_filter(caller.reach(Scope.SITES_READ)))
    )
    return {site_id: name for site_id, name in rows}


# The sites a form offers as choices, by name: past this many a form still works, with the first ones.
MAX_SITE_CHOICES = 500


async def site_choices(session: AsyncSession, caller: Caller, scope: Scope) -> list[tuple[str, str]]:
    """(id, name) of the sites where `scope` holds for the caller, by name (at most MAX_SITE_CHOICES), for a form
    or a filter that names a site."""
    rows = await session.execute(
        select(Site.id, Site.name)
        .where(site_filter(caller.reach(scope)))
        .order_by(Site.name, Site.id)
        .limit(MAX_SITE_CHOICES)
    )
    return [(site_id, name) for site_id, name in rows]


async def site_company(session: AsyncSession, site_id: str) -> str:
    site = await session.get(Site, site_id)
    if site is None:
        raise NotFound("site", site_id)
    return site.company_id
