"""Custom headers of a webhook: extra request headers a partner asks for (a tenant name, a routing key), checked
before they are stored and again before they are sent.

Rules:
- Rule 1: a name is an RFC 9110 §5.6.2 token; names are compared case-insensitively and each appears once.
- Rule 2: a value holds no CR, LF or NUL (no header injection, nothing a store cannot keep) and no other control
  character but horizontal tab; leading and trailing whitespace is not kept (RFC 9110 §5.5).
- Rule 3: a custom header never stands in for one chargenet sets itself: the signed ones (`Signature`,
  `Signature-Input`, `Content-Digest`, `X-Request-ID`), `Authorization`, and those that say how the message is
  framed or routed (`Host`, `Content-Length`, `Content-Type`, `Transfer-Encoding`, `Connection` and the other
  hop-by-hop headers, `User-Agent`).
- Rule 4: at most `MAX_HEADERS` headers, a name at most `MAX_NAME_LENGTH` characters, a value at most
  `MAX_VALUE_LENGTH` (as given, before its outer whitespace goes).

The API's document writes these rules as JSON Schema (`NAME_SCHEMA`, `VALUE_SCHEMA`); this module applies them for
every face.

Custom headers are not covered by the signature: the covered components stay the same for every webhook, so a
partner's verifier never depends on a webhook's settings. They are stored as given and shown to operators: they
are not the place for a secret (the webhook's authentication is).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from chargenet.errors import InvalidInput

MAX_HEADERS = 10
MAX_NAME_LENGTH = 64
MAX_VALUE_LENGTH = 1024
FIELD = "headers"

RESERVED = frozenset(
    {
        "signature",
        "signature-input",
        "content-digest",
        "x-request-id",
        "authorization",
        "host",
        "content-length",
        "content-type",
        "content-encoding",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "user-agent",
    }
)

# RFC 9110 §5.6.2: token = 1*tchar.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Control characters but HTAB, and DEL (RFC 9110 §5.5: field-vchar, SP and HTAB only; obs-text is let through).
_FORBIDDEN_IN_VALUE = re.compile("[\x00-\x08\x0a-\x1f\x7f]")

CustomHeaders = tuple[tuple[str, str], ...]


def _any_case(name: str) -> str:
    """A regular expression (ECMA 262 and Python alike, which have no common case-insensitive flag) of `name` in
    any case."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in name)  # the others are all '-'


# Rules 1, 3 and 4 of a name, and Rules 2 and 4 of a value, as JSON Schema.
NAME_SCHEMA = {
    "pattern": f"^{_TOKEN.pattern}$",
    "maxLength": MAX_NAME_LENGTH,
    "not": {"pattern": f"^(?:{'|'.join(_any_case(name) for name in sorted(RESERVED))})$"},
}
VALUE_SCHEMA = {"type": "string", "maxLength": MAX_VALUE_LENGTH, "pattern": "^[^\\x00-\\x08\\x0a-\\x1f\\x7f]*$"}


def is_reserved(name: str) -> bool:
    """Whether `name` is a header chargenet sets itself (Rule 3), in any case."""
    return name.lower() in RESERVED


def check_custom_headers(headers: Iterable[tuple[str, str]]) -> CustomHeaders:
    """The headers as they are stored and sent, in the order given; raises InvalidInput (field `headers`) for the
    first that breaks a rule."""
    checked: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name, value in headers:
        if not _TOKEN.fullmatch(name):
            shown = name[:MAX_NAME_LENGTH]
            raise InvalidInput(f"{shown!r} is not a header name (RFC 9110 token characters only)", field=FIELD)
        if len(name) > MAX_NAME_LENGTH:
            raise InvalidInput(f"header names are at most {MAX_NAME_LENGTH} characters", field=FIELD)
        if is_reserved(name):
            raise InvalidInput(f"{name} is set by chargenet and cannot be a custom header", field=FIELD)
        if name.lower() in seen:
            raise InvalidInput(f"{name} is given more than once", field=FIELD)
        if _FORBIDDEN_IN_VALUE.search(value):
            raise InvalidInput(f"the value of {name} holds CR, LF, NUL or another control character", field=FIELD)
        if len(value) > MAX_VALUE_LENGTH:
            raise InvalidInput(f"the value of {name} is longer than {MAX_VALUE_LENGTH} characters", field=FIELD)
        seen.add(name.lower())
        checked.append((name, value.strip(" \t")))
    if len(checked) > MAX_HEADERS:
        raise InvalidInput(f"at most {MAX_HEADERS} custom headers", field=FIELD)
    return tuple(checked)


def parse_header_line(line: str) -> tuple[str, str]:
    """`Name: value` (as the command line and the console's text area take them) as a (name, value) pair."""
    name, colon, value = line.partition(":")
    if not colon:
        raise InvalidInput(f"{line[:MAX_NAME_LENGTH]!r} is not `Name: value`", field=FIELD)
    return name.strip(), value


def stored_headers(headers: CustomHeaders) -> str | None:
    """Custom headers as a column keeps them: a JSON list of [name, value] pairs, None for none."""
    return json.dumps([list(pair) for pair in headers]) if headers else None


def loaded_headers(column: str | None) -> CustomHeaders:
    if not column:
        return ()
    return tuple((str(name), str(value)) for name, value in json.loads(column))
