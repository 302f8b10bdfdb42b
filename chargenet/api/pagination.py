"""Cursor pagination shared by every list (decisions.md §1): `?limit=` (default 50, at most 500) and
`?cursor=`, answered as `{"items": [...], "next": <cursor or null>}`. A cursor is the opaque, base64url
form of the last key returned; lists are ordered by that key."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Query

from chargenet.domain.text import is_storable
from chargenet.errors import InvalidInput

T = TypeVar("T")

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


@dataclass(frozen=True, slots=True)
class Page:
    limit: int
    after: str | None

    @property
    def fetch(self) -> int:
        """Rows to ask the database for: one beyond the page tells whether another page follows, so the
        last page answers `next: null` instead of pointing at an empty one."""
        return self.limit + 1

    def answer(self, rows: Sequence[T], key: Callable[[T], str], to_json: Callable[[T], Any]) -> dict[str, Any]:
        """The list body for `rows`, fetched with `limit=self.fetch` and ordered by `key`."""
        shown = rows[: self.limit]
        more = len(rows) > self.limit
        return {"items": [to_json(r) for r in shown], "next": encode_cursor(key(shown[-1])) if more else None}


def encode_cursor(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).rstrip(b"=").decode()


def decode_cursor(cursor: str) -> str:
    try:
        key = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        key = ""
    if not key or not is_storable(key):
        raise InvalidInput("not a cursor from a previous page", field="cursor")
    return key


def page_params(
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Page:
    return Page(limit, decode_cursor(cursor) if cursor else None)
