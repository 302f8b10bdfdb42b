"""`?limit=` (default 50, at most 500) and `?cursor=` of every list, parsed into the services' one page request;
every list answers `{"items": [...], "next": <cursor or null>}` (`services.pages.Page`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from chargenet.services.pages import DEFAULT_LIMIT, MAX_LIMIT, PageRequest, decode_cursor, encode_cursor

__all__ = ["PageParams", "decode_cursor", "encode_cursor", "page_params"]


def page_params(
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> PageRequest:
    return PageRequest.of(limit, cursor)


PageParams = Annotated[PageRequest, Depends(page_params)]
