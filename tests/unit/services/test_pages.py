from __future__ import annotations

import pytest

from chargenet.domain.text import INT32_MAX
from chargenet.services.pages import MAX_ROW_NUMBER, PageRequest, UnknownCursor, encode_cursor, numeric_key


@pytest.mark.parametrize("key", ["0", "7", "4096", str(MAX_ROW_NUMBER)])
def test_a_row_number_key_is_that_number(key: str) -> None:
    assert numeric_key(key) == int(key)


@pytest.mark.parametrize(
    "key",
    ["", "abc", "-1", "+1", " 1", "1 ", "1_000", "1.0", "١٢", "²", str(MAX_ROW_NUMBER + 1), "9" * 40],
)
def test_a_key_that_is_no_row_number_names_no_page(key: str) -> None:
    with pytest.raises(UnknownCursor):
        numeric_key(key)


def test_a_number_beyond_the_column_names_no_page() -> None:
    assert numeric_key(str(INT32_MAX), high=INT32_MAX) == INT32_MAX
    with pytest.raises(UnknownCursor):
        numeric_key(str(INT32_MAX + 1), high=INT32_MAX)


def test_the_error_names_the_cursor_as_a_page_gave_it() -> None:
    with pytest.raises(UnknownCursor) as raised:
        numeric_key("abc")
    assert raised.value.identifier == encode_cursor("abc")


def test_a_page_request_reads_its_key_as_a_row_number() -> None:
    assert PageRequest(10).after_number() is None
    assert PageRequest.of(10, encode_cursor("42")).after_number() == 42
    with pytest.raises(UnknownCursor):
        PageRequest.of(10, encode_cursor("ST-1")).after_number()
