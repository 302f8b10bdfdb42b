"""The part of RFC 8941 Structured Field Values that webhook signatures use: Dictionaries of Items and Inner
Lists with Parameters, parsed strictly by the algorithms of RFC 8941 §4.2 and serialized by §4.1.

Written here rather than taken from `http-sf` because the SDK promises partners no dependencies beyond httpx
and cryptography. Decimals are not used by any header this SDK reads and are refused.
"""

from __future__ import annotations

import base64
import binascii
import string
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Token:
    value: str


BareItem = int | str | bytes | bool | Token
Parameters = dict[str, BareItem]


@dataclass(frozen=True, slots=True)
class Item:
    value: BareItem
    params: Parameters = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class InnerList:
    items: tuple[Item, ...]
    params: Parameters = field(default_factory=dict)


Member = Item | InnerList

_KEY_START = string.ascii_lowercase + "*"
_KEY_CHARS = string.ascii_lowercase + string.digits + "_-.*"
_TOKEN_START = string.ascii_letters + "*"
_TOKEN_CHARS = string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~:/"
_BASE64_CHARS = string.ascii_letters + string.digits + "+/="


class StructuredFieldError(ValueError):
    pass


class _Parser:
    def __init__(self, text: str) -> None:
        if not text.isascii():
            raise StructuredFieldError("structured field is not ASCII")
        self.text = text
        self.pos = 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def take(self) -> str:
        char = self.peek()
        self.pos += 1
        return char

    def skip(self, chars: str) -> None:
        while self.peek() and self.peek() in chars:
            self.pos += 1

    def done(self) -> bool:
        return self.pos >= len(self.text)

    def dictionary(self) -> dict[str, Member]:
        result: dict[str, Member] = {}
        self.skip(" ")
        while not self.done():
            key = self.key()
            if self.peek() == "=":
                self.pos += 1
                member = self.item_or_inner_list()
            else:
                member = Item(True, self.parameters())
            if key in result:
                raise StructuredFieldError(f"duplicate dictionary key {key!r}")
            result[key] = member
            self.skip(" \t")
            if self.done():
                return result
            if self.take() != ",":
                raise StructuredFieldError("expected ',' between dictionary members")
            self.skip(" \t")
            if self.done():
                raise StructuredFieldError("trailing ',' in dictionary")
        return result

    def item_or_inner_list(self) -> Member:
        if self.peek() == "(":
            return self.inner_list()
        return self.item()

    def inner_list(self) -> InnerList:
        self.pos += 1
        items: list[Item] = []
        while not self.done():
            self.skip(" ")
            if self.peek() == ")":
                self.pos += 1
                return InnerList(tuple(items), self.parameters())
            items.append(self.item())
            if self.peek() not in (" ", ")"):
                raise StructuredFieldError("expected ' ' or ')' in inner list")
        raise StructuredFieldError("inner list is not closed")

    def item(self) -> Item:
        return Item(self.bare_item(), self.parameters())

    def parameters(self) -> Parameters:
        params: Parameters = {}
        while self.peek() == ";":
            self.pos += 1
            self.skip(" ")
            key = self.key()
            value: BareItem = True
            if self.peek() == "=":
                self.pos += 1
                value = self.bare_item()
            params[key] = value
        return params

    def key(self) -> str:
        if not self.peek() or self.peek() not in _KEY_START:
            raise StructuredFieldError("a key starts with a lower-case letter or '*'")
        start = self.pos
        self.skip(_KEY_CHARS)
        return self.text[start : self.pos]

    def bare_item(self) -> BareItem:
        char = self.peek()
        if char == "-" or char.isdigit():
            return self.integer()
        if char == '"':
            return self.string()
        if char == ":":
            return self.byte_sequence()
        if char == "?":
            return self.boolean()
        if char and char in _TOKEN_START:
            start = self.pos
            self.pos += 1
            self.skip(_TOKEN_CHARS)
            return Token(self.text[start : self.pos])
        raise StructuredFieldError(f"unexpected character {char!r}")

    def integer(self) -> int:
        start = self.pos
        if self.peek() == "-":
            self.pos += 1
        digits_start = self.pos
        self.skip(string.digits)
        digits = self.text[digits_start : self.pos]
        if not digits or len(digits) > 15:
            raise StructuredFieldError("integers have 1 to 15 digits")
        if self.peek() == ".":
            raise StructuredFieldError("decimals are not accepted here")
        return int(self.text[start : self.pos])

    def string(self) -> str:
        self.pos += 1
        chars: list[str] = []
        while not self.done():
            char = self.take()
            if char == "\\":
                escaped = self.take()
                if escaped not in ('"', "\\"):
                    raise StructuredFieldError("only '\\\"' and '\\\\' may be escaped in a string")
                chars.append(escaped)
            elif char == '"':
                return "".join(chars)
            elif not (" " <= char <= "~"):
                raise StructuredFieldError("strings hold printable ASCII only")
            else:
                chars.append(char)
        raise StructuredFieldError("string is not closed")

    def byte_sequence(self) -> bytes:
        self.pos += 1
        start = self.pos
        end = self.text.find(":", start)
        if end < 0:
            raise StructuredFieldError("byte sequence is not closed")
        encoded = self.text[start:end]
        if any(char not in _BASE64_CHARS for char in encoded):
            raise StructuredFieldError("byte sequence is not base64")
        self.pos = end + 1
        try:
            return base64.b64decode(encoded, validate=True)
        except binascii.Error as exc:
            raise StructuredFieldError("byte sequence is not base64") from exc

    def boolean(self) -> bool:
        self.pos += 1
        char = self.take()
        if char not in ("0", "1"):
            raise StructuredFieldError("booleans are ?0 or ?1")
        return char == "1"


def parse_dictionary(text: str) -> dict[str, Member]:
    """Parse a Dictionary field value; raises StructuredFieldError when it is not one."""
    return _Parser(text.strip(" ")).dictionary()


def serialize_bare_item(value: BareItem) -> str:
    if isinstance(value, bool):
        return "?1" if value else "?0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Token):
        return value.value
    if isinstance(value, bytes):
        return f":{base64.b64encode(value).decode('ascii')}:"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def serialize_parameters(params: Parameters) -> str:
    return "".join(
        f";{key}" if value is True else f";{key}={serialize_bare_item(value)}" for key, value in params.items()
    )


def serialize_inner_list(inner: InnerList) -> str:
    items = " ".join(serialize_bare_item(item.value) + serialize_parameters(item.params) for item in inner.items)
    return f"({items}){serialize_parameters(inner.params)}"
