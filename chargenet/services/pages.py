"""The one keyset page every list answers with, whichever face asked for it.

A list is ordered by a key (an id); a page holds at most `limit` items and, when more follow, `next`: the opaque
(base64url) form of the last key shown, which the next request passes back as its cursor. Lists fetch one row
beyond the page, so the last page says `next: null` instead of pointing at an empty one. A cursor of that form that
no page gave names no page: `NotFound` (`UnknownCursor`), as an id that names no object. Lists ordered by a row
number (an id) read their key with `PageRequest.after_number`, so a key that is no such number is that same error.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from chargenet.domain.text import is_storable
from chargenet.errors import InvalidInput, NotFound

T = TypeVar("T")

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_ROW_NUMBER = 2**63 - 1  # the largest id of a 64-bit row number
# The base64url alphabet. Lengths that cannot decode (4k+1) pass and name no page (404): a grouped pattern said
# more, but generators of test data for the document (schemathesis, Hypothesis) could not reliably build its longest
# values, and a partner gains nothing from 422 over 404 for a cursor no page gave.
CURSOR_PATTERN = r"^[A-Za-z0-9_-]*$"


class UnknownCursor(NotFound):
    """A cursor that no page of this list gave."""

    def __init__(self, cursor: str) -> None:
        super().__init__("page at cursor", cursor[:40])


def encode_cursor(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).rstrip(b"=").decode()


def decode_cursor(cursor: str) -> str:
    try:
        key = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        key = ""
    if not key or not is_storable(key):
        raise UnknownCursor(cursor)
    return key


def numeric_key(key: str, *, high: int = MAX_ROW_NUMBER) -> int:
    """The row number a page's key stands for, in a list ordered by one (an id): decimal ASCII digits, at most
    `high` (the column's largest value). `UnknownCursor` for any other key, which no page of such a list gave."""
    if not (key.isascii() and key.isdecimal() and len(key) <= len(str(high)) and int(key) <= high):
        raise UnknownCursor(encode_cursor(key))
    return int(key)


@dataclass(frozen=True, slots=True)
class PageRequest:
    """Which page: at most `limit` items after the key `after` (None: from the start)."""

    limit: int = DEFAULT_LIMIT
    after: str | None = None

    @classmethod
    def of(cls, limit: int = DEFAULT_LIMIT, cursor: str | None = None) -> PageRequest:
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"must be 1-{MAX_LIMIT}, got {limit}", field="limit")
        return cls(limit, decode_cursor(cursor) if cursor else None)

    def after_number(self, *, high: int = MAX_ROW_NUMBER) -> int | None:
        """`after` as the row number it is in a list ordered by one (`numeric_key`); None from the start."""
        return None if self.after is None else numeric_key(self.after, high=high)

    @property
    def fetch(self) -> int:
        """Rows to ask the database for: one beyond the page tells whether another page follows."""
        return self.limit + 1

    def page(self, rows: Sequence[T], key: Callable[[T], str]) -> Page[T]:
        """The page of `rows`, fetched with `limit=self.fetch` and ordered by `key`."""
        return self.complete(list(rows[: self.limit]), more=len(rows) > self.limit, key=key)

    def complete(self, shown: list[T], *, more: bool, key: Callable[[T], str]) -> Page[T]:
        """The page of `shown` (at most `limit` items), when the caller already knows whether `more` follow."""
        return Page[T](items=shown, next=encode_cursor(key(shown[-1])) if more and shown else None)


class Page(BaseModel, Generic[T]):
    model_config = ConfigDict(frozen=True)

    items: list[T]
    next: str | None


async def every_page(fetch: Callable[[PageRequest], Awaitable[Page[T]]]) -> list[T]:
    """All items of a list, page after page (the command line prints whole lists)."""
    items: list[T] = []
    request = PageRequest(MAX_LIMIT)
    while True:
        page = await fetch(request)
        items.extend(page.items)
        if page.next is None:
            return items
        request = PageRequest(MAX_LIMIT, decode_cursor(page.next))
