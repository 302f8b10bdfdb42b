from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from chargenet.api.pagination import Page, encode_cursor, page_params
from chargenet.api.security import require
from chargenet.auth.server import Caller
from chargenet.domain.scopes import Scope
from chargenet.errors import NotFound
from chargenet.services import catalog

SiteReader = Annotated[Caller, Depends(require(Scope.SITES_READ))]
PageParams = Annotated[Page, Depends(page_params)]

router = APIRouter(tags=["sites"])


@router.get("/sites")
async def list_sites(request: Request, caller: SiteReader, page: PageParams) -> dict[str, Any]:
    """The sites the caller's groups reach with `sites:read`."""
    async with request.app.state.context.store.transaction() as session:
        rows = await catalog.list_sites(
            session, caller.permissions.reach(Scope.SITES_READ), limit=page.limit, after=page.after
        )
    more = len(rows) == page.limit
    return {"items": [r.to_json() for r in rows], "next": encode_cursor(rows[-1].id) if more and rows else None}


@router.get("/sites/{site_id}")
async def get_site(site_id: str, request: Request, caller: SiteReader) -> dict[str, Any]:
    async with request.app.state.context.store.transaction() as session:
        site = await catalog.get_site(session, caller.permissions.reach(Scope.SITES_READ), site_id)
    if site is None:
        # Also for a site of another company: its existence is not revealed.
        raise NotFound("site", site_id)
    return site.to_json()
