"""A site's TLS files for its link to the upstream, kept in the keys folder and never in the database.

`upstream-tls/<siteId>/client.crt` holds the client certificate the edge shows the upstream (PEM, with any
intermediates after it), `client.key` its private key (unencrypted PEM, mode 0600), and `ca-bundle.pem` the CA
certificates the upstream's server certificate is checked against (without it: the system's). They are checked as
they are stored (`store_client_certificate`, `store_ca_bundle`) and read by the edge whenever a link opens
(`UpstreamTlsContexts`), so that files changed by another process count for the next connection.
"""

from __future__ import annotations

import hashlib
import shutil
import ssl
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from chargenet.errors import ChargenetError, InvalidInput
from chargenet.keys.store import KeyStore

FOLDER = "upstream-tls"
CLIENT_CERTIFICATE = "client.crt"
CLIENT_KEY = "client.key"
CA_BUNDLE = "ca-bundle.pem"


class UpstreamTlsUnusable(ChargenetError):
    """A site's TLS files are missing or cannot be loaded (a keys folder not shared, a file edited by hand)."""


@dataclass(frozen=True, slots=True)
class ClientCertificateSummary:
    subject: str
    not_after: datetime
    fingerprint: str  # SHA-256 of the DER certificate, hex with colons


def _folder(keys: KeyStore, site_id: str) -> Path:
    return keys.directory / FOLDER / site_id


def _name(site_id: str, file: str) -> str:
    return f"{FOLDER}/{site_id}/{file}"


def fingerprint(certificate: x509.Certificate) -> str:
    digest = hashlib.sha256(certificate.public_bytes(serialization.Encoding.DER)).hexdigest().upper()
    return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))


def _certificates(pem: bytes, field: str) -> list[x509.Certificate]:
    try:
        certificates = x509.load_pem_x509_certificates(pem)
    except ValueError:
        raise InvalidInput("is not PEM certificates", field=field) from None
    if not certificates:
        raise InvalidInput("holds no certificate", field=field)
    return certificates


def check_client_certificate(certificate_pem: bytes, key_pem: bytes, *, now: datetime) -> ClientCertificateSummary:
    """The summary of a client certificate (the first of `certificate_pem`) whose private key is `key_pem` and which
    is valid now; `InvalidInput` otherwise."""
    certificate = _certificates(certificate_pem, "client-cert")[0]
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        raise InvalidInput("is not an unencrypted PEM private key", field="client-key") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise InvalidInput("must be an RSA or EC key", field="client-key")
    public = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(*public) != certificate.public_key().public_bytes(*public):
        raise InvalidInput("is not the client certificate's private key", field="client-key")
    if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
        raise InvalidInput(
            f"is not valid now (valid {certificate.not_valid_before_utc.isoformat()} to"
            f" {certificate.not_valid_after_utc.isoformat()})",
            field="client-cert",
        )
    return ClientCertificateSummary(
        subject=certificate.subject.rfc4514_string(),
        not_after=certificate.not_valid_after_utc,
        fingerprint=fingerprint(certificate),
    )


def check_ca_bundle(bundle_pem: bytes) -> int:
    """How many certificates a CA bundle holds; `InvalidInput` for one that holds none."""
    return len(_certificates(bundle_pem, "ca-bundle"))


def store_client_certificate(
    keys: KeyStore, site_id: str, certificate_pem: bytes, key_pem: bytes, *, now: datetime
) -> ClientCertificateSummary:
    summary = check_client_certificate(certificate_pem, key_pem, now=now)
    _folder(keys, site_id).mkdir(parents=True, exist_ok=True, mode=0o700)
    keys.write_private(_name(site_id, CLIENT_KEY), key_pem)
    # The certificate last: a reader that sees a new one finds its key beside it.
    keys.write_private(_name(site_id, CLIENT_CERTIFICATE), certificate_pem)
    return summary


def store_ca_bundle(keys: KeyStore, site_id: str, bundle_pem: bytes) -> int:
    count = check_ca_bundle(bundle_pem)
    _folder(keys, site_id).mkdir(parents=True, exist_ok=True, mode=0o700)
    keys.write_private(_name(site_id, CA_BUNDLE), bundle_pem)
    return count


def remove(keys: KeyStore, site_id: str) -> None:
    """The site's TLS files, all of them."""
    shutil.rmtree(_folder(keys, site_id), ignore_errors=True)


def client_context(keys: KeyStore, site_id: str, *, client_certificate: bool) -> ssl.SSLContext:
    """A TLS client context for the site's upstream: the server certificate checked against the site's CA bundle
    (the system's without one) and its host name, and, with `client_certificate`, the site's certificate shown."""
    folder = _folder(keys, site_id)
    bundle = folder / CA_BUNDLE
    try:
        context = ssl.create_default_context(cafile=str(bundle) if bundle.exists() else None)
        if client_certificate:
            context.load_cert_chain(folder / CLIENT_CERTIFICATE, folder / CLIENT_KEY)
    except (OSError, ssl.SSLError) as exc:
        raise UpstreamTlsUnusable(f"site {site_id}: {exc}") from None
    return context


class UpstreamTlsContexts:
    """The sites' client contexts as the links need them: made once, made again when a site's files change (every
    link of a site shares one; making one reads the system's CA store, which takes milliseconds)."""

    def __init__(self, keys: KeyStore) -> None:
        self._keys = keys
        self._cache: dict[tuple[str, bool], tuple[tuple[int, ...], ssl.SSLContext]] = {}

    def context(self, site_id: str, *, client_certificate: bool) -> ssl.SSLContext:
        """Raises `UpstreamTlsUnusable`."""
        folder = _folder(self._keys, site_id)
        version: list[int] = []
        for file in (CA_BUNDLE, CLIENT_CERTIFICATE, CLIENT_KEY):
            try:
                status = (folder / file).stat()
            except FileNotFoundError:
                version += [0, 0]
            else:
                version += [status.st_mtime_ns, status.st_ino]  # a new file: a new inode
        key = (site_id, client_certificate)
        cached = self._cache.get(key)
        if cached is not None and cached[0] == tuple(version):
            return cached[1]
        context = client_context(self._keys, site_id, client_certificate=client_certificate)
        self._cache[key] = (tuple(version), context)
        return context
