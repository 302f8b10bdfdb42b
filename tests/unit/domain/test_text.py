"""Text from outside: charsets, byte-order marks, lone surrogates, U+0000 and integer ranges, as plain values."""

from __future__ import annotations

import pytest

from chargenet.domain import text
from chargenet.errors import InvalidInput, UnreadableInput


@pytest.mark.parametrize(
    "content_type", [None, "application/json", "application/json; charset=utf-8", 'application/json;charset="UTF-8"']
)
def test_utf8_body_passes(content_type: str | None) -> None:
    assert text.utf8_body(b'{"a":"\xc3\xa9"}', content_type) == b'{"a":"\xc3\xa9"}'


def test_leading_byte_order_mark_is_skipped() -> None:
    assert text.utf8_body(b'\xef\xbb\xbf{"a":1}', "application/json") == b'{"a":1}'


@pytest.mark.parametrize("charset", ["iso-8859-1", "utf-16", "latin1", "utf8", "", "x" * 500])
def test_any_other_declared_charset_is_unreadable(charset: str) -> None:
    with pytest.raises(UnreadableInput):
        text.utf8_body(b"{}", f"application/json; charset={charset}")


@pytest.mark.parametrize("body", [b'{"a":"\xe9"}', b"\xff\xfe{\x00}\x00", b'{"a":"\xed\xa0\x80"}', b"\xef\xbb"])
def test_bytes_that_are_not_utf8_are_unreadable(body: bytes) -> None:
    with pytest.raises(UnreadableInput):
        text.utf8_body(body, "application/json")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"idTag":"\\ud800"}', "idTag"),
        (b'{"a":[1,{"b":"x\\udfff"}]}', "a/1/b"),
        (b'{"\\udc00":1}', "\ufffd"),
        (b'{"chargePointId":"CP\\u0000"}', "chargePointId"),
    ],
)
def test_string_that_is_not_storable_text_is_unreadable_naming_the_field(body: bytes, field: str) -> None:
    with pytest.raises(UnreadableInput) as caught:
        text.check_json_values(body)
    assert caught.value.field == field


def test_surrogate_pair_is_text() -> None:
    text.check_json_values(b'{"a":"\\ud83d\\ude00"}')


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2**63, 10**30])
def test_integer_beyond_32_bits_is_invalid_input_naming_the_field(value: int) -> None:
    with pytest.raises(InvalidInput) as caught:
        text.check_json_values(b'{"connectorId":%d}' % value)
    assert caught.value.field == "connectorId"
    assert not isinstance(caught.value, UnreadableInput)


@pytest.mark.parametrize(
    "body", [b'{"a":2147483647,"b":-2147483648}', b'{"a":12345678901.5}', b'"1234567890123"', b"[1e400]"]
)
def test_values_within_the_rules_pass(body: bytes) -> None:
    text.check_json_values(body)


@pytest.mark.parametrize("body", [b"not json \\u", b"[" * 100_000 + b"1234567890123"])
def test_body_that_is_not_json_is_left_to_its_reader(body: bytes) -> None:
    text.check_json_values(body)


def test_path_holding_nul_is_unreadable() -> None:
    with pytest.raises(UnreadableInput):
        text.check_text("/charge-points/\x00", "path")
    text.check_text("/charge-points/CP-1\ufffd", "path")
