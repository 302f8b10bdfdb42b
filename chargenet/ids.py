"""Identifiers and secrets: one place that draws randomness, so tests can inject their own."""

from __future__ import annotations

import os
import re
import secrets
import socket
import uuid

_ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case: no i, l, o, u


def new_id(prefix: str, length: int = 12) -> str:
    """A readable random identifier such as `site_4f9q2x7m1cae` (60 bits of randomness)."""
    return f"{prefix}_{''.join(secrets.choice(_ID_ALPHABET) for _ in range(length))}"


def process_owner() -> str:
    """Who holds a lease (webhook lanes, meter buses): unique per process start, so a restarted process never
    mistakes its predecessor's leases for its own."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(3)}"


def new_event_id() -> str:
    return str(uuid.uuid4())


STATION_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,47}$")


def new_authorization_key() -> str:
    """A station's OCPP AuthorizationKey (Basic auth password), 32 URL-safe characters: within OCPP's 16-40 and
    typeable into a station's configuration screen."""
    return secrets.token_urlsafe(24)
