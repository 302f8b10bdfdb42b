"""A site's local authorization list: tags decided at the edge, never forwarded to an upstream.

Reading it needs `sites:read` on the site, changing it `sites:write` (decisions.md §3). Every change is written
to the audit log in the caller's transaction, whichever face asked, and bumps the entry's `version`; a change or a
removal made from an older version (`expected_version`) is refused as `StaleChange`."""

from __future__ import annotations

from datetime import datetime
from typing import get_args

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.events import AuthorizationStatus
from chargenet.domain.generations import OCPP201
from chargenet.domain.scopes import Scope
from chargenet.edge.ocpp201.commands import DEFAULT_TOKEN_TYPE, IdTokenType
from chargenet.errors import InvalidInput, NotFound
from chargenet.services import audit
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_site
from chargenet.services.versions import check_version
from chargenet.services.views import Instant, View, like_escaped, optional
from chargenet.store.models import LocalAuthEntry

LISTABLE_STATUSES = (
    AuthorizationStatus.ACCEPTED,
    AuthorizationStatus.BLOCKED,
    AuthorizationStatus.EXPIRED,
    AuthorizationStatus.INVALID,
)
MAX_ID_TAG = 20  # OCPP 1.6 IdToken is CiString20Type
MAX_ID_TOKEN = 36  # OCPP 2.0.1 IdTokenType.idToken: what the list keeps (decisions.md §5 "idTokens")
# OCPP 2.0.1 IdTokenEnumType; a 1.6 station is sent the value alone.
ID_TOKEN_TYPES: tuple[str, ...] = get_args(IdTokenType)


class LocalAuthView(View):
    site_id: str
    id_tag: str
    status: str
    expires_at: Instant | None = optional()
    parent_id_tag: str | None = optional()
    id_token_type: str
    version: int


def _view(row: LocalAuthEntry) -> LocalAuthView:
    return LocalAuthView(
        site_id=row.site_id,
        id_tag=row.id_tag,
        status=row.status,
        expires_at=row.expires_at,
        parent_id_tag=row.parent_id_tag,
        id_token_type=row.id_token_type,
        version=row.version,
    )


def validate_id_tag(id_tag: str, field: str = "idTag", longest: int = MAX_ID_TAG) -> str:
    """A tag a station may be sent: `longest` is 1.6's 20 unless said otherwise."""
    if not 1 <= len(id_tag) <= longest:
        raise InvalidInput(f"must be 1 to {longest} characters", field=field)
    return id_tag


def longest_id_tag(generation: str) -> int:
    """The longest tag a station speaking `generation` may be sent: 1.6's idTag is CiString20Type, 2.0.1's
    IdTokenType.idToken 36 characters."""
    return MAX_ID_TOKEN if generation == OCPP201 else MAX_ID_TAG


def validate_id_tag_for(generation: str, id_tag: str, field: str = "idTag") -> str:
    """A tag a station speaking `generation` may be sent; `InvalidInput` naming the limit and the generation."""
    longest = longest_id_tag(generation)
    if not 1 <= len(id_tag) <= longest:
        raise InvalidInput(f"must be 1 to {longest} characters for a station speaking {generation}", field=field)
    return id_tag


def fits_16(id_tag: str) -> bool:
    """Whether a 1.6 station may be sent the tag (CiString20Type)."""
    return len(id_tag) <= MAX_ID_TAG


async def add_entry(
    session: AsyncSession,
    caller: Caller,
    *,
    site_id: str,
    id_tag: str,
    now: datetime,
    status: str = "Accepted",
    expires_at: datetime | None = None,
    parent_id_tag: str | None = None,
    expected_version: int | None = None,
    id_token_type: str = DEFAULT_TOKEN_TYPE,
) -> LocalAuthView:
    """Add a tag to the site's list, or change the entry it already has. A tag is up to 36 characters with its
    2.0.1 type; one over 20 reaches 2.0.1 stations only (`station_commands.send_local_list`). Raises `StaleChange`
    when `expected_version` is given and the entry moved on or is gone (a new entry needs none)."""
    site = await reachable_site(session, caller, Scope.SITES_WRITE, site_id)
    validate_id_tag(id_tag, longest=MAX_ID_TOKEN)
    if parent_id_tag is not None:
        validate_id_tag(parent_id_tag, "parentIdTag", MAX_ID_TOKEN)
    if id_token_type not in ID_TOKEN_TYPES:
        raise InvalidInput(f"{id_token_type!r} is not one of {', '.join(ID_TOKEN_TYPES)}", field="idTokenType")
    if status not in {s.value for s in LISTABLE_STATUSES}:
        raise InvalidInput(f"{status!r} is not one of {', '.join(s.value for s in LISTABLE_STATUSES)}", field="status")
    if expires_at is not None and expires_at.tzinfo is None:
        raise InvalidInput("needs a UTC offset", field="expires")
    row = await session.get(LocalAuthEntry, (site_id, id_tag))
    action = "localauth.update"
    if row is None:
        # A change made from a version of an entry removed meanwhile is as stale as one changed meanwhile.
        check_version("local list entry", repr(id_tag), 0, expected_version)
        row = LocalAuthEntry(site_id=site_id, id_tag=id_tag, created_at=now)
        session.add(row)
        action = "localauth.add"
    else:
        check_version("local list entry", repr(id_tag), row.version, expected_version)
        same = (row.status, row.expires_at, row.parent_id_tag, row.id_token_type)
        if same == (status, expires_at, parent_id_tag, id_token_type):
            return _view(row)
        row.version += 1
    row.status, row.expires_at, row.parent_id_tag = status, expires_at, parent_id_tag
    row.id_token_type = id_token_type
    await session.flush()
    detail = {
        "idTag": id_tag,
        "type": id_token_type,  # the idToken's (a key naming a token reads as a secret to the audit log)
        "status": status,
        "expires": expires_at.isoformat() if expires_at else "never",
    }
    if parent_id_tag is not None:
        detail["parentIdTag"] = parent_id_tag
    await audit.record_change(session, caller, action, row, now=now, detail={"site": site.id, **detail})
    return _view(row)


async def list_entries(
    session: AsyncSession,
    caller: Caller,
    page: PageRequest,
    *,
    site_id: str,
    status: str | None = None,
    id_tag_contains: str | None = None,
) -> Page[LocalAuthView]:
    """The site's entries, ordered by idTag; `status` and `id_tag_contains` (any case) narrow them."""
    await reachable_site(session, caller, Scope.SITES_READ, site_id)
    query = (
        select(LocalAuthEntry)
        .where(LocalAuthEntry.site_id == site_id)
        .order_by(LocalAuthEntry.id_tag)
        .limit(page.fetch)
    )
    if status:
        query = query.where(LocalAuthEntry.status == status)
    if id_tag_contains:
        query = query.where(LocalAuthEntry.id_tag.ilike(f"%{like_escaped(id_tag_contains)}%", escape="\\"))
    if page.after is not None:
        query = query.where(LocalAuthEntry.id_tag > page.after)
    return page.page([_view(row) for row in await session.scalars(query)], lambda entry: entry.id_tag)


async def entries_of_site(session: AsyncSession, site_id: str) -> list[LocalAuthView]:
    """Every entry of the site, ordered by idTag, for a use case that has already checked its caller's reach
    (sending the list to a station needs `charge-points:write` there, not `sites:read`)."""
    query = select(LocalAuthEntry).where(LocalAuthEntry.site_id == site_id).order_by(LocalAuthEntry.id_tag)
    return [_view(row) for row in await session.scalars(query)]


async def get_entry(session: AsyncSession, caller: Caller, *, site_id: str, id_tag: str) -> LocalAuthView:
    await reachable_site(session, caller, Scope.SITES_READ, site_id)
    row = await session.get(LocalAuthEntry, (site_id, id_tag))
    if row is None:
        raise NotFound("local list entry", f"{site_id}/{id_tag}")
    return _view(row)


async def remove_entry(
    session: AsyncSession,
    caller: Caller,
    *,
    site_id: str,
    id_tag: str,
    now: datetime,
    expected_version: int | None = None,
) -> None:
    """Take the tag off the site's list. Raises `StaleChange` when `expected_version` is given and the entry moved
    on."""
    site = await reachable_site(session, caller, Scope.SITES_WRITE, site_id)
    row = await session.get(LocalAuthEntry, (site_id, id_tag))
    if row is None:
        raise NotFound("local list entry", f"{site_id}/{id_tag}")
    check_version("local list entry", repr(id_tag), row.version, expected_version)
    await session.delete(row)
    await session.flush()
    detail = {"site": site.id, "idTag": id_tag}
    await audit.record_change(session, caller, "localauth.remove", row, now=now, detail=detail)
