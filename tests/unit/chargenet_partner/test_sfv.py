from __future__ import annotations

import pytest
from chargenet_partner._sfv import (
    InnerList,
    Item,
    StructuredFieldError,
    Token,
    parse_dictionary,
    serialize_inner_list,
)


def test_signature_input_parses_into_components_and_parameters() -> None:
    parsed = parse_dictionary('sig1=("@method" "@path");created=1618884473;keyid="sign";alg="ed25519"')
    assert parsed == {
        "sig1": InnerList((Item("@method"), Item("@path")), {"created": 1618884473, "keyid": "sign", "alg": "ed25519"})
    }


def test_inner_list_serializes_back_to_the_same_text() -> None:
    text = '("@method" "x-request-id");created=1;keyid="s\\"q";alg="ed25519"'
    member = parse_dictionary("a=" + text)["a"]
    assert isinstance(member, InnerList)
    assert serialize_inner_list(member) == text


def test_byte_sequence_member_decodes_base64() -> None:
    assert parse_dictionary("sha-256=:AAEC:") == {"sha-256": Item(b"\x00\x01\x02")}


def test_token_parameter_stays_a_token() -> None:
    member = parse_dictionary("a=();alg=ed25519")["a"]
    assert isinstance(member, InnerList)
    assert member.params == {"alg": Token("ed25519")}


def test_bare_key_is_true() -> None:
    assert parse_dictionary("a, b=?0") == {"a": Item(True), "b": Item(False)}


@pytest.mark.parametrize(
    "text",
    [
        "sig1=(",
        'sig1="open',
        "sig1=:not base64!:",
        "Sig1=1",
        "a=1, a=2",
        "a=1,",
        "a=1.5",
        "a=1234567890123456",
        'a="\\n"',
        "a=1 b=2",
    ],
)
def test_malformed_dictionary_is_refused(text: str) -> None:
    with pytest.raises(StructuredFieldError):
        parse_dictionary(text)
