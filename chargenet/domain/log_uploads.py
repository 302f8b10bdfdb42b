"""Log uploads from stations: the one-time place a station uploads a log to, and what it may call its file.

A station asked for a log (1.6 GetDiagnostics, 2.0.1 GetLog) is handed a location under `/uploads/{token}/`:
1.6's `location` is a directory the station adds its own file name to, and 2.0.1 stations are given the same
form. The token is random and only its SHA-256 is stored, so a reader of the database cannot upload. A slot takes
one file, within its size bound, before it expires; a second upload to it, an unknown token or an expired one is
refused with nothing stored.

The location must be `https`, except on a loopback host (a station simulated on the same machine, a test):
a log travels over the Internet and may name the station's secrets.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from urllib.parse import quote, urlsplit

from chargenet.errors import InvalidInput

SLOT_LIFETIME = timedelta(hours=24)  # a station may wait for its session to end before uploading
MAX_LOG_BYTES = 50 * 1024 * 1024
MAX_FILE_NAME = 120
TOKEN_BYTES = 32
UPLOADS_PATH = "/uploads"

_SAFE_CHARACTER = re.compile(r"[^A-Za-z0-9._-]")
_LOOPBACK_NAMES = frozenset({"localhost"})


class SlotRefusal(StrEnum):
    """Why an upload to a slot is refused (404 unknown, 410 used or expired)."""

    UNKNOWN = "unknown"
    USED = "used"
    EXPIRED = "expired"


@dataclass(frozen=True, slots=True)
class UploadSlot:
    """What the store keeps of a slot: the hash of its token, never the token."""

    token_hash: str
    station_id: str
    expires_at: datetime
    max_bytes: int
    used_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class NewSlot:
    token: str  # handed to the station in its location, once
    slot: UploadSlot


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_slot(
    station_id: str, now: datetime, *, lifetime: timedelta = SLOT_LIFETIME, max_bytes: int = MAX_LOG_BYTES
) -> NewSlot:
    token = secrets.token_urlsafe(TOKEN_BYTES)
    slot = UploadSlot(token_hash(token), station_id, now + lifetime, max_bytes)
    return NewSlot(token, slot)


def refusal(slot: UploadSlot | None, now: datetime) -> SlotRefusal | None:
    """Why an upload to `slot` (None: no slot has that token) is refused at `now`; None when it is taken."""
    if slot is None:
        return SlotRefusal.UNKNOWN
    if slot.used_at is not None:
        return SlotRefusal.USED
    if now >= slot.expires_at:
        return SlotRefusal.EXPIRED
    return None


def sanitized_file_name(name: str) -> str:
    """The station's file name as it is stored and offered for download: its last path part only (no traversal),
    characters outside `A-Za-z0-9._-` replaced by `_`, no leading dot, at most `MAX_FILE_NAME` characters keeping
    the extension. `InvalidInput` when nothing is left."""
    last = name.replace("\\", "/").rsplit("/", 1)[-1]
    safe = _SAFE_CHARACTER.sub("_", last).lstrip(".")
    if not safe.strip("_"):
        raise InvalidInput("names no file", field="filename")
    if len(safe) > MAX_FILE_NAME:
        stem, dot, extension = safe.rpartition(".")
        if dot and 0 < len(extension) <= 16:
            safe = stem[: MAX_FILE_NAME - len(extension) - 1] + "." + extension
        else:
            safe = safe[:MAX_FILE_NAME]
    return safe


def is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def upload_base_problem(base_url: str) -> str | None:
    """Why `base_url` cannot be where stations upload (None: it can): it must be an https URL, or http on a
    loopback host."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        return f"{base_url!r} is not an http:// or https:// URL without query or fragment"
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        return f"{base_url!r} is http on a host that is not loopback: stations upload logs over https"
    return None


def upload_location(base_url: str, token: str) -> str:
    """The directory a station uploads its log file to (it adds the file name)."""
    return f"{base_url.rstrip('/')}{UPLOADS_PATH}/{quote(token, safe='')}/"


def redacted_path(path: str) -> str:
    """A request path as logs show it: an upload location's token hidden, since it lets whoever reads it upload."""
    prefix = UPLOADS_PATH + "/"
    if not path.startswith(prefix):
        return path
    _token, slash, rest = path[len(prefix) :].partition("/")
    return f"{prefix}[token]{slash}{rest}"


class SizeExceeded(Exception):
    """An upload grew past its slot's bound."""


@dataclass(slots=True)
class ByteBudget:
    """Counts an upload's bytes as they arrive, so a body past the bound is refused while it is read."""

    limit: int
    received: int = 0

    def take(self, chunk_length: int) -> None:
        self.received += chunk_length
        if self.received > self.limit:
            raise SizeExceeded(self.limit)
