"""A site's local authorization list: tags decided at the edge, never forwarded to an upstream."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.events import AuthorizationStatus
from chargenet.errors import InvalidInput, NotFound
from chargenet.store.models import LocalAuthEntry, Site

LISTABLE_STATUSES = (
    AuthorizationStatus.ACCEPTED,
    AuthorizationStatus.BLOCKED,
    AuthorizationStatus.EXPIRED,
    AuthorizationStatus.INVALID,
)
MAX_ID_TAG = 20  # OCPP 1.6 IdToken is CiString20Type


@dataclass(frozen=True, slots=True)
class LocalAuthView:
    site_id: str
    id_tag: str
    status: str
    expires_at: datetime | None
    parent_id_tag: str | None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"siteId": self.site_id, "idTag": self.id_tag, "status": self.status}
        if self.expires_at is not None:
            data["expiresAt"] = self.expires_at.isoformat()
        if self.parent_id_tag is not None:
            data["parentIdTag"] = self.parent_id_tag
        return data


def _view(row: LocalAuthEntry) -> LocalAuthView:
    return LocalAuthView(row.site_id, row.id_tag, row.status, row.expires_at, row.parent_id_tag)


def validate_id_tag(id_tag: str, field: str = "idTag") -> str:
    if not 1 <= len(id_tag) <= MAX_ID_TAG:
        raise InvalidInput(f"must be 1 to {MAX_ID_TAG} characters", field=field)
    return id_tag


async def add_entry(
    session: AsyncSession,
    *,
    site_id: str,
    id_tag: str,
    now: datetime,
    status: str = "Accepted",
    expires_at: datetime | None = None,
    parent_id_tag: str | None = None,
) -> LocalAuthView:
    """Add a tag to the site's list, or change the entry it already has."""
    if await session.get(Site, site_id) is None:
        raise NotFound("site", site_id)
    validate_id_tag(id_tag)
    if parent_id_tag is not None:
        validate_id_tag(parent_id_tag, "parentIdTag")
    if status not in {s.value for s in LISTABLE_STATUSES}:
        raise InvalidInput(f"{status!r} is not one of {', '.join(s.value for s in LISTABLE_STATUSES)}", field="status")
    if expires_at is not None and expires_at.tzinfo is None:
        raise InvalidInput("needs a UTC offset", field="expires")
    row = await session.get(LocalAuthEntry, (site_id, id_tag))
    if row is None:
        row = LocalAuthEntry(site_id=site_id, id_tag=id_tag, created_at=now)
        session.add(row)
    row.status, row.expires_at, row.parent_id_tag = status, expires_at, parent_id_tag
    await session.flush()
    return _view(row)


async def list_entries(session: AsyncSession, *, site_id: str) -> list[LocalAuthView]:
    if await session.get(Site, site_id) is None:
        raise NotFound("site", site_id)
    rows = await session.scalars(
        select(LocalAuthEntry).where(LocalAuthEntry.site_id == site_id).order_by(LocalAuthEntry.id_tag)
    )
    return [_view(row) for row in rows]


async def remove_entry(session: AsyncSession, *, site_id: str, id_tag: str) -> None:
    row = await session.get(LocalAuthEntry, (site_id, id_tag))
    if row is None:
        raise NotFound("local list entry", f"{site_id}/{id_tag}")
    await session.delete(row)
