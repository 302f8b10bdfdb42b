"""Text from outside, checked before anything reads it (decisions.md "Input the service refuses").

Pure rules, shared by every wire that takes text: the API's request bodies, paths and queries, the token endpoint's
form, OCPP frames.

- Rule 1: a body is UTF-8. A declared charset other than UTF-8, or bytes that are not UTF-8, are refused; a leading
  UTF-8 byte-order mark is skipped (RFC 8259 §8.1 lets a reader ignore it).
- Rule 2: every string is text the service can keep: Unicode scalar values only (JSON's `\\u` escapes can name half
  a surrogate pair, which no UTF-8 store, log or answer can hold) and no U+0000 (PostgreSQL text cannot hold it).
- Rule 3: integers in JSON bodies are 32-bit signed (the range of the store's INTEGER columns and of OCPP) unless a
  field bounds them tighter; a larger one is refused before it reaches a store or a service.
"""

from __future__ import annotations

import json
import re
from typing import Any

from chargenet.errors import InvalidInput, UnreadableInput

UTF8_BOM = b"\xef\xbb\xbf"
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

# In a Python string a surrogate pair read from JSON is already one character: any surrogate left is lone.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# Rule 3 needs at least 10 digits in a row (2147483648); Rule 2 a `\u` escape (or a raw NUL, which JSON refuses).
_MAY_HOLD_SURPRISES = re.compile(rb"\\u|\d{10}")


def declared_charset(content_type: str | None) -> str | None:
    """The `charset` parameter of a Content-Type header, lower-cased and unquoted, or None."""
    if not content_type:
        return None
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').strip().lower()
    return None


def utf8_body(body: bytes, content_type: str | None) -> bytes:
    """Rule 1: the body without a leading byte-order mark. Raises `UnreadableInput`."""
    charset = declared_charset(content_type)
    if charset is not None and charset != "utf-8":
        raise UnreadableInput(f"the charset {charset[:40]!r} is not accepted: send UTF-8")
    if body.startswith(UTF8_BOM):
        body = body[len(UTF8_BOM) :]
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableInput(f"the body is not UTF-8 (at byte {exc.start})") from None
    return body


def is_storable(text: str) -> bool:
    """Rule 2 for one string."""
    return _UNSTORABLE.search(text) is None


def replace_unstorable(text: str) -> str:
    """`text` with U+FFFD for each character Rule 2 refuses, for showing what a peer said."""
    return _UNSTORABLE.sub("\ufffd", text)


def _printable(text: str) -> str:
    return replace_unstorable(text)[:100]


def _walk(value: Any) -> tuple[str, Any] | None:
    """The first string (key or value) breaking Rule 2 or integer breaking Rule 3, with its path. Iterative: a body
    nests as deep as the JSON reader allowed."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if not is_storable(item):
                return "/".join(path), item
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if not INT32_MIN <= item <= INT32_MAX:
                return "/".join(path), item
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                if not is_storable(key):
                    return "/".join((*path, _printable(key))), key
                stack.append((child, (*path, key)))
        elif isinstance(item, list):
            stack.extend((child, (*path, str(index))) for index, child in reversed(list(enumerate(item))))
    return None


def check_json_values(body: bytes) -> None:
    """Rules 2 and 3 for a JSON body (already through `utf8_body`). Raises `UnreadableInput` for a string that is
    not storable text and `InvalidInput` for an integer out of range, each naming the field; a body that is not
    JSON at all is left to its reader, which says so."""
    if _MAY_HOLD_SURPRISES.search(body) is None:
        return  # the common case: nothing to look for
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return
    found = _walk(value)
    if found is None:
        return
    field, bad = found
    if isinstance(bad, str):
        raise UnreadableInput("a string holds a lone surrogate or U+0000: it is no text the service keeps", field)
    raise InvalidInput(f"an integer outside {INT32_MIN}..{INT32_MAX}", field)


def check_text(text: str, where: str) -> None:
    """Rule 2 for a path or query. Raises `UnreadableInput`."""
    if not is_storable(text):
        raise UnreadableInput("holds U+0000 or a lone surrogate", where)
