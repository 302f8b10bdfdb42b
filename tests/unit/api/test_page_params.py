from __future__ import annotations

import pytest

from chargenet.api.pagination import decode_cursor, encode_cursor, page_params
from chargenet.errors import InvalidInput


def test_cursor_round_trips() -> None:
    assert decode_cursor(encode_cursor("ST-1/é")) == "ST-1/é"


def test_cursor_is_url_safe() -> None:
    assert all(c.isalnum() or c in "-_" for c in encode_cursor("a?b&c=d/+"))


@pytest.mark.parametrize("cursor", ["!!!", "_w"])
def test_foreign_cursor_is_invalid_input(cursor: str) -> None:
    with pytest.raises(InvalidInput) as info:
        decode_cursor(cursor)
    assert info.value.field == "cursor"


def test_page_params_decode_the_cursor() -> None:
    page = page_params(limit=10, cursor=encode_cursor("ST-9"))
    assert (page.limit, page.after) == (10, "ST-9")


def test_page_fetches_one_row_beyond_the_limit() -> None:
    assert page_params(limit=2, cursor=None).fetch == 3


def test_page_with_an_extra_row_points_next_at_the_last_shown() -> None:
    page = page_params(limit=2, cursor=None).page(["a", "b", "c"], str)
    assert page.items == ["a", "b"]
    assert page.next is not None and decode_cursor(page.next) == "b"


def test_page_without_an_extra_row_is_the_last_page() -> None:
    page = page_params(limit=2, cursor=None).page(["a", "b"], str)
    assert (page.items, page.next) == (["a", "b"], None)


def test_page_of_no_rows_is_empty_and_last() -> None:
    page = page_params(limit=2, cursor=None).page([], str)
    assert (page.items, page.next) == ([], None)
