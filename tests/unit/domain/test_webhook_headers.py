from __future__ import annotations

import re

import pytest

from chargenet.domain.webhook_headers import (
    MAX_HEADERS,
    NAME_SCHEMA,
    check_custom_headers,
    loaded_headers,
    parse_header_line,
    stored_headers,
)
from chargenet.errors import InvalidInput


def test_custom_headers_are_kept_in_their_order_with_values_trimmed() -> None:
    headers = check_custom_headers([("X-Tenant", " acme "), ("X-Route", "eu-1")])
    assert headers == (("X-Tenant", "acme"), ("X-Route", "eu-1"))
    assert loaded_headers(stored_headers(headers)) == headers


@pytest.mark.parametrize(
    "name",
    [
        "Signature",
        "signature-input",
        "CONTENT-DIGEST",
        "Authorization",
        "Host",
        "Content-Length",
        "X-Request-ID",
        "x-request-id",
        "Content-Type",
        "Transfer-Encoding",
        "Connection",
    ],
)
def test_a_header_chargenet_sets_is_refused_in_any_case(name: str) -> None:
    with pytest.raises(InvalidInput, match="set by chargenet") as refused:
        check_custom_headers([(name, "x")])
    assert refused.value.field == "headers"


@pytest.mark.parametrize("value", ["a\r\nX-Evil: 1", "a\nb", "a\rb", "a\x00b", "a\x1bb"])
def test_a_value_with_cr_lf_nul_or_a_control_character_is_refused(value: str) -> None:
    with pytest.raises(InvalidInput, match="control character"):
        check_custom_headers([("X-Tenant", value)])


@pytest.mark.parametrize("name", ["", "X Tenant", "X-Tenant:", "Tenant\r\n", "Ünicode", "a" * 65])
def test_a_name_that_is_no_rfc9110_token_or_too_long_is_refused(name: str) -> None:
    with pytest.raises(InvalidInput):
        check_custom_headers([(name, "x")])


def test_a_name_given_twice_in_any_case_is_refused() -> None:
    with pytest.raises(InvalidInput, match="more than once"):
        check_custom_headers([("X-Tenant", "a"), ("x-tenant", "b")])


def test_count_and_value_size_are_bounded() -> None:
    with pytest.raises(InvalidInput, match=f"at most {MAX_HEADERS}"):
        check_custom_headers([(f"X-H{i}", "v") for i in range(MAX_HEADERS + 1)])
    with pytest.raises(InvalidInput, match="longer than"):
        check_custom_headers([("X-Big", "v" * 1025)])
    with pytest.raises(InvalidInput, match="longer than"):  # counted as given: what the API's document says
        check_custom_headers([("X-Big", "v" * 1000 + " " * 25)])


def test_the_documents_schema_refuses_the_reserved_names_in_any_case_and_takes_the_others() -> None:
    reserved = re.compile(NAME_SCHEMA["not"]["pattern"])
    token = re.compile(NAME_SCHEMA["pattern"])
    assert reserved.fullmatch("sIgNaTuRe-InPuT") and reserved.fullmatch("X-REQUEST-ID")
    assert not reserved.fullmatch("X-Signature") and token.fullmatch("X-Signature")
    assert not token.fullmatch("X Tenant")


def test_a_tab_inside_a_value_is_allowed() -> None:
    assert check_custom_headers([("X-Pair", "a\tb")]) == (("X-Pair", "a\tb"),)


def test_a_command_line_header_is_name_colon_value() -> None:
    assert parse_header_line("X-Tenant: acme") == ("X-Tenant", " acme")
    with pytest.raises(InvalidInput):
        parse_header_line("X-Tenant acme")
