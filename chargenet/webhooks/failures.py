"""The kind of a failed attempt's error, for `/health`, which anyone may read.

A lane's `last_error` is written for the operator (`HTTP 503`, `token endpoint answered HTTP 400 (invalid_client)`,
`connection failed: ...`) and can carry what the partner answered or a host name; the console shows it to
signed-in operators, `/health` shows only its kind. The kinds follow the messages `sender.py` and `lane.py` write.
"""

from __future__ import annotations

import re

_HTTP_STATUS = re.compile(r"HTTP (\d{3})\b")

# Most specific first: the first prefix the message starts with decides its kind.
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("timeout", "timeout"),
    ("address refused", "address_refused"),
    ("token URL address refused", "address_refused"),
    ("connection broken", "connection_broken"),
    ("connection reset", "connection_reset"),
    ("token", "token_failed"),
    ("lane full", "lane_full"),
    ("the webhook no longer subscribes", "unsubscribed"),
)


def failure_kind(error: str | None) -> str | None:
    """`http_4xx`, `http_5xx`, `redirect`, `timeout`, `connection_refused`, `connection_failed`,
    `connection_broken`, `connection_reset`, `name_unresolved`, `address_refused`, `token_failed`, or `error`
    for a message none of these fits; None for no error."""
    if error is None:
        return None
    if error.startswith("redirect not followed"):
        return "redirect"
    status = _HTTP_STATUS.match(error)
    if status is not None:
        return f"http_{status.group(1)[0]}xx"
    if error.startswith("connection failed"):
        lowered = error.lower()
        return "connection_refused" if "refused" in lowered or "errno 111" in lowered else "connection_failed"
    if "does not resolve" in error:
        return "name_unresolved"
    for prefix, kind in _PREFIXES:
        if error.startswith(prefix):
            return kind
    return "error"
