"""Whether a station's WebSocket handshake is let in, by its security profile (`domain.security_profiles`).

The facts come from the handshake: the scheme (`wss` directly, or `ws` behind a trusted proxy that says
`X-Forwarded-Proto: https`, which uvicorn turns into `wss`), the `Authorization` header, and the client certificate:
the one this process's own TLS was shown (the ASGI `tls` extension, `edge.tls`), or the one a trusted proxy forwards
in `X-SSL-Client-Cert` (nginx's `$ssl_client_escaped_cert`, URL-encoded PEM). That header is believed only from an
address in `--forwarded-allow-ips`; from anyone else it is ignored and logged.

A refusal is answered before the upgrade (401 or 403), logged in one line with its reason, counted by reason
(`refusals`, in `/metrics`) and kept on the station's record for its page (`last_refusal`), written at most once a
minute per station and reason, so that a station retrying in a loop costs the store nothing more.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import ipaddress
import logging
from collections import Counter
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import unquote

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import NameOID
from sqlalchemy import update
from starlette.responses import PlainTextResponse, Response

from chargenet.domain.security_profiles import (
    CertificateFacts,
    Credentials,
    Expectations,
    Refusal,
    SecurityProfile,
    decide,
)
from chargenet.edge.records import StationInfo
from chargenet.edge.transport import client_certificate_of, peer_address_of
from chargenet.keys import KeyStore, SecretHasher
from chargenet.keys.station_ca import StationCaReader
from chargenet.store.db import Store
from chargenet.store.models import Station

log = logging.getLogger(__name__)

FORWARDED_CERTIFICATE = "x-ssl-client-cert"
RECORD_EVERY = timedelta(minutes=1)


def password_matches(header: str | None, station_id: str, stored_hash: str, hasher: SecretHasher) -> bool:
    """Security profile 1: `Authorization: Basic base64(<stationId>:<AuthorizationKey>)`."""
    if header is None or not header.lower().startswith("basic "):
        return False
    try:
        raw = base64.b64decode(header[6:].strip(), validate=True)
    except (binascii.Error, ValueError):
        return False
    user, separator, key = raw.partition(b":")
    if not separator or user != station_id.encode():
        return False
    candidates = [key.hex(), key.hex().upper()]
    with contextlib.suppress(UnicodeDecodeError):
        candidates.insert(0, key.decode("utf-8"))
    # Every candidate is checked so the time taken does not tell which form matched.
    results = [hasher.verify(candidate, stored_hash) for candidate in candidates]
    return any(results)


class TrustedProxies:
    """The addresses `--forwarded-allow-ips` names (IPs, networks, or `*`); None trusts none."""

    def __init__(self, setting: str | None) -> None:
        items = [item.strip() for item in (setting or "").split(",") if item.strip()]
        self._everyone = "*" in items
        self._networks = [ipaddress.ip_network(item, strict=False) for item in items if item != "*"]

    def __contains__(self, address: str | None) -> bool:
        if address is None:
            return False
        if self._everyone:
            return True
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self._networks)


def certificate_facts(pem: str, ca: x509.Certificate | None) -> CertificateFacts | None:
    """What a client certificate says and whether `ca` issued it; None when `pem` is not a certificate."""
    try:
        certificate = x509.load_pem_x509_certificate(pem.encode())
    except ValueError:
        return None
    issued = False
    if ca is not None:
        with contextlib.suppress(ValueError, TypeError, InvalidSignature):
            certificate.verify_directly_issued_by(ca)
            issued = True
    return CertificateFacts(
        issued_by_station_ca=issued,
        common_name=_first(certificate.subject, NameOID.COMMON_NAME),
        organisation=_first(certificate.subject, NameOID.ORGANIZATION_NAME),
        not_before=certificate.not_valid_before_utc,
        not_after=certificate.not_valid_after_utc,
    )


def _first(name: x509.Name, oid: x509.ObjectIdentifier) -> str | None:
    found = name.get_attributes_for_oid(oid)
    value = found[0].value if found else None
    return value if isinstance(value, str) else None


class Admission:
    def __init__(self, store: Store, keys: KeyStore, trusted_proxies: str | None) -> None:
        self._store = store
        self._hasher = keys.secret_hasher()
        self._authorities = StationCaReader(keys)
        self._proxies = TrustedProxies(trusted_proxies)
        self._recorded: dict[str, tuple[Refusal, datetime]] = {}
        self.refusals: Counter[str] = Counter()

    async def refuse(self, scope: Mapping[str, Any], station: StationInfo, now: datetime) -> Response | None:
        """The answer refusing the handshake, or None to let the station in."""
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope.get("headers", [])}
        authorization = headers.get("authorization")
        if authorization is None:
            credentials = Credentials.ABSENT
        elif station.password_hash is not None and password_matches(
            authorization, station.station_id, station.password_hash, self._hasher
        ):
            credentials = Credentials.VALID
        else:
            credentials = Credentials.INVALID
        profile = SecurityProfile(station.security_profile)
        facts = None
        if profile is SecurityProfile.CLIENT_CERTIFICATE:
            pem = self._client_certificate(scope, headers, station.station_id)
            if pem is not None:
                ca = self._authorities.certificate(station.company_id)
                facts = certificate_facts(pem, ca) or _unreadable(now)
                if station.relays_csrs and not facts.issued_by_station_ca:
                    # Its site relays CSRs to the upstream, whose CA then signs them: trusted as well.
                    upstream = self._authorities.upstream_certificate(station.site_id)
                    facts = certificate_facts(pem, upstream) or facts
        refusal = decide(
            profile,
            tls=scope.get("scheme") == "wss",
            credentials=credentials,
            certificate=facts,
            expected=Expectations(
                common_name=station.serial_number or station.station_id, organisation=station.organisation_name
            ),
            now=now,
        )
        if refusal is None:
            return None
        log.warning(
            f"station refused: {refusal.description}",
            extra={"fields": {"station": station.station_id, "reason": refusal.value, "profile": int(profile)}},
        )
        self.refusals[refusal.value] += 1
        await self._record(station.station_id, refusal, now)
        if refusal.status == 401:
            return Response("unauthorized", status_code=401, headers={"WWW-Authenticate": 'Basic realm="chargenet"'})
        return PlainTextResponse(f"forbidden: {refusal.description}", status_code=403)

    def _client_certificate(self, scope: Mapping[str, Any], headers: dict[str, str], station_id: str) -> str | None:
        forwarded = headers.get(FORWARDED_CERTIFICATE)
        if forwarded:
            peer = peer_address_of(scope)
            if peer in self._proxies:
                return unquote(forwarded)
            log.warning(
                "ignored a client certificate header from an address that is not a trusted proxy",
                extra={"fields": {"station": station_id, "address": peer}},
            )
        return client_certificate_of(scope)

    async def _record(self, station_id: str, refusal: Refusal, now: datetime) -> None:
        last = self._recorded.get(station_id)
        if last is not None and last[0] is refusal and now - last[1] < RECORD_EVERY:
            return
        self._recorded[station_id] = (refusal, now)
        async with self._store.transaction() as session:
            await session.execute(
                update(Station).where(Station.id == station_id).values(last_refusal=refusal.value, last_refusal_at=now)
            )


def _unreadable(now: datetime) -> CertificateFacts:
    """Facts of something shown as a certificate that is not one: no CA issued it."""
    return CertificateFacts(
        issued_by_station_ca=False, common_name=None, organisation=None, not_before=now, not_after=now
    )
