"""The string fields the API reads, each with the rule the service applies written where the OpenAPI document
shows it (a pattern, a length, an enumeration), so that what the document allows is what the service accepts.

Every string the API reads holds no U+0000 (`domain.text` Rule 2): `chargenet.api.openapi` says so for every string
of the document at once, as the input check refuses it for every request at once.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AwareDatetime, BeforeValidator, Field, StrictStr

from chargenet.api.bounds import Bounds, Integral
from chargenet.domain.tenants import MAX_CONNECTORS_PER_CHARGE_POINT
from chargenet.ids import STATION_ID_PATTERN
from chargenet.services.localauth import MAX_ID_TAG, MAX_ID_TOKEN
from chargenet.services.stations import AUTHORIZATION_KEY_LENGTH

# Text with a character that is not white space (what `str.strip` leaves something of), and no U+0000.
NOT_BLANK = r"^[^\x00]*[^\s\x00][^\x00]*$"

# A name: what `domain.tenants.validate_name` keeps, at most 200 characters with one that is not white space.
Name = Annotated[
    StrictStr,
    Field(min_length=1, max_length=200, pattern=NOT_BLANK, description="1-200 characters, not all white space"),
]

# An object's id as the API shows it (`site_...`, `grp_...`, a station id); ids are never longer.
ObjectId = Annotated[StrictStr, Field(min_length=1, max_length=64)]

StationId = Annotated[
    StrictStr,
    Field(
        pattern=STATION_ID_PATTERN.pattern,
        description="1-48 characters: letters, digits, '.', '_', ':', '-', starting with a letter or digit",
    ),
]

# OCPP 1.6 IdToken (CiString20Type).
IdTag = Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_TAG)]
# OCPP 2.0.1 idToken (a local list entry's: one over 20 characters reaches 2.0.1 stations only).
IdToken = Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_TOKEN)]

AuthorizationKey = Annotated[
    StrictStr,
    Field(
        min_length=AUTHORIZATION_KEY_LENGTH[0],
        max_length=AUTHORIZATION_KEY_LENGTH[1],
        description="The AuthorizationKey exactly as the station sends it in Basic auth (16-40 characters)",
    ),
]

# A secret the service keeps encrypted to present elsewhere (an upstream key, a partner's credentials).
Secret = Annotated[StrictStr, Field(min_length=1, max_length=500)]

# A connector of one charge point (0: the whole charge point), as far as any charge point has them.
ConnectorId = Annotated[int, Bounds(0, MAX_CONNECTORS_PER_CHARGE_POINT), Integral]
NumberedConnectorId = Annotated[int, Bounds(1, MAX_CONNECTORS_PER_CHARGE_POINT), Integral]


def _rfc3339(value: object) -> object:
    """Only a date-time as RFC 3339 writes it (JSON Schema's `date-time`): no number, no other string form."""
    if not isinstance(value, str) or RFC3339.fullmatch(value) is None:
        raise ValueError("must be an RFC 3339 date-time with an offset, such as 2027-01-01T12:00:00Z")
    return value


RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})")

# A point in time from a client: the document's `date-time`, and nothing pydantic's lax parsing would take too.
DateTime = Annotated[AwareDatetime, BeforeValidator(_rfc3339)]

# Hosts by name (RFC 1123 labels, the last one starting with a letter, as top-level domains do) or by IPv4
# address in dotted-quad form outside the unspecified and multicast ranges, which no server listens on (the
# webhook target policy refuses them in any case, `webhooks.addresses`).
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_TOP_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_FIRST_OCTET = r"(?:22[0-3]|2[01][0-9]|1[0-9]{2}|[1-9][0-9]?)"
_HOST = rf"(?:(?:{_LABEL}\.)*{_TOP_LABEL}|{_FIRST_OCTET}(?:\.{_OCTET}){{3}})"
_PORT = r"(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?"
_PATH = r"(?:/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?"
_QUERY = r"(?:\?[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?"

HTTP_URL_PATTERN = rf"^https?://{_HOST}{_PORT}{_PATH}{_QUERY}$"
WEBSOCKET_URL_PATTERN = rf"^wss?://{_HOST}{_PORT}{_PATH}$"

HttpUrl = Annotated[
    StrictStr,
    Field(
        max_length=2000,
        pattern=HTTP_URL_PATTERN,
        description=(
            "An http:// or https:// URL without credentials or fragment, its host a name or an IPv4 address. A host"
            " that resolves to an address the service does not connect to is refused (422): private ones unless the"
            " operator allows them, never unspecified or multicast ones."
        ),
    ),
]

WebSocketUrl = Annotated[
    StrictStr,
    Field(
        max_length=2000,
        pattern=WEBSOCKET_URL_PATTERN,
        description="A ws:// or wss:// URL without query or fragment, its host a name or an IPv4 address",
    ),
]

# OCPP generations as the API writes them (decisions.md §5): a station's, and the ones a site's upstream takes.
OcppVersions = Annotated[list[Literal["ocpp1.6", "ocpp2.0.1"]], Field(min_length=1, max_length=2)]
