from __future__ import annotations

import re

import pytest

from chargenet.api.pagination import decode_cursor, encode_cursor, page_params
from chargenet.errors import NotFound
from chargenet.services.pages import CURSOR_PATTERN


def test_cursor_round_trips() -> None:
    assert decode_cursor(encode_cursor("ST-1/é")) == "ST-1/é"


def test_cursor_is_url_safe() -> None:
    assert all(c.isalnum() or c in "-_" for c in encode_cursor("a?b&c=d/+"))


@pytest.mark.parametrize("cursor", ["!!!", "_w", "gICA", "A", "ABCDE"])
def test_foreign_cursor_names_no_page(cursor: str) -> None:
    # Not the base64url of a key a page showed: like an id of no object, a 404 (the API refuses another form, 422).
    with pytest.raises(NotFound):
        decode_cursor(cursor)


@pytest.mark.parametrize("cursor", ["", "AB", "ABC", "ABCD", "ABCDEF", "a-_z"])
def test_cursor_form_is_the_base64url_alphabet_without_padding(cursor: str) -> None:
    assert re.fullmatch(CURSOR_PATTERN, cursor)


@pytest.mark.parametrize("cursor", ["AB==", "a+/b", "!!!", "a b"])
def test_other_forms_are_not_cursors(cursor: str) -> None:
    assert not re.fullmatch(CURSOR_PATTERN, cursor)


async def test_page_params_decode_the_cursor() -> None:
    page = await page_params(limit=10, cursor=encode_cursor("ST-9"))
    assert (page.limit, page.after) == (10, "ST-9")


async def test_page_fetches_one_row_beyond_the_limit() -> None:
    assert (await page_params(limit=2, cursor=None)).fetch == 3


async def test_page_with_an_extra_row_points_next_at_the_last_shown() -> None:
    page = (await page_params(limit=2, cursor=None)).page(["a", "b", "c"], str)
    assert page.items == ["a", "b"]
    assert page.next is not None and decode_cursor(page.next) == "b"


async def test_page_without_an_extra_row_is_the_last_page() -> None:
    page = (await page_params(limit=2, cursor=None)).page(["a", "b"], str)
    assert (page.items, page.next) == (["a", "b"], None)


async def test_page_of_no_rows_is_empty_and_last() -> None:
    page = (await page_params(limit=2, cursor=None)).page([], str)
    assert (page.items, page.next) == ([], None)
