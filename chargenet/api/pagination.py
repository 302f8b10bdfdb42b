"""`?limit=` (default 50, at most 500) and `?cursor=` of every list, parsed into the services' one page request;
every list answers `{"items": [...], "next": <cursor or null>}` (`services.pages.Page`).

A cursor is opaque: base64url without padding, as `next` gives it. One of that form that no page of the list gave
names no page, and is answered 404 like an id that names no object; one of another form is 422."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Query

from chargenet.services.pages import (
    CURSOR_PATTERN,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    PageRequest,
    decode_cursor,
    encode_cursor,
)

__all__ = ["Cursor", "PageParams", "decode_cursor", "encode_cursor", "page_params"]

CURSOR_DESCRIPTION = "The `next` of the previous page; absent for the first page"


def Cursor(max_length: int = 200) -> Any:
    """The `?cursor=` parameter: base64url without padding, at most `max_length` characters."""
    return Query(max_length=max_length, pattern=CURSOR_PATTERN, description=CURSOR_DESCRIPTION)


async def page_params(  # a coroutine, so FastAPI calls it in place rather than in its thread pool
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Cursor()] = None,
) -> PageRequest:
    return PageRequest.of(limit, cursor)


PageParams = Annotated[PageRequest, Depends(page_params)]
