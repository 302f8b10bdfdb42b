"""A company's station CA (decisions.md "Security profiles"), kept in the keys folder and never in the database.

`station-ca/<companyId>.crt` holds the CA certificate (PEM) and `station-ca/<companyId>.key` its private key (PEM,
mode 0600). A CA is made here (`create`) or brought by the operator (`import_ca`, which checks that the key is the
certificate's and that the certificate is a CA's). The handshake of a profile 3 station reads the certificate
through `StationCaReader`, which looks at the file's modification time on every read, so that a CA created or
imported by another process counts for the next handshake.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from chargenet.errors import Conflict, InvalidInput
from chargenet.keys.store import KeyStore

FOLDER = "station-ca"
VALIDITY = timedelta(days=3650)


@dataclass(frozen=True, slots=True)
class CaSummary:
    subject: str
    not_after: datetime
    fingerprint: str  # SHA-256 of the DER certificate, hex with colons
    certificate_pem: str


def certificate_name(company_id: str) -> str:
    return f"{FOLDER}/{company_id}.crt"


def key_name(company_id: str) -> str:
    return f"{FOLDER}/{company_id}.key"


def upstream_certificate_name(site_id: str) -> str:
    """The CA of a site's upstream, which signs the CSRs the site relays to it: trusted for the site's stations."""
    return f"{FOLDER}/upstream-{site_id}.crt"


def import_upstream_ca(keys: KeyStore, site_id: str, certificate_pem: bytes) -> CaSummary:
    """The upstream's CA certificate (no key: the upstream signs); it replaces the site's current one."""
    try:
        certificate = x509.load_pem_x509_certificate(certificate_pem)
    except ValueError:
        raise InvalidInput("is not a PEM certificate", field="--cert") from None
    try:
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        constraints = None
    if constraints is None or not constraints.ca:
        raise InvalidInput("is not a CA certificate (basicConstraints CA:TRUE)", field="--cert")
    (keys.directory / FOLDER).mkdir(parents=True, exist_ok=True, mode=0o700)
    keys.write_private(upstream_certificate_name(site_id), certificate.public_bytes(serialization.Encoding.PEM))
    return summary(certificate)


def exists(keys: KeyStore, company_id: str) -> bool:
    return (keys.directory / certificate_name(company_id)).exists()


def create(keys: KeyStore, company_id: str, company_name: str, *, now: datetime) -> CaSummary:
    """A new P-256 CA for the company's stations, valid ten years; refused when the company has one."""
    if exists(keys, company_id):
        raise Conflict(f"company {company_id} has a station CA already")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, company_name[:64]),
            x509.NameAttribute(NameOID.COMMON_NAME, f"{company_name[:40]} station CA"),
        ]
    )
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _store(keys, company_id, certificate, key_pem)
    return summary(certificate)


def import_ca(keys: KeyStore, company_id: str, certificate_pem: bytes, key_pem: bytes) -> CaSummary:
    """The operator's own CA: a CA certificate and the private key that goes with it (unencrypted PEM). An
    imported CA replaces the company's current one."""
    try:
        certificate = x509.load_pem_x509_certificate(certificate_pem)
    except ValueError:
        raise InvalidInput("is not a PEM certificate", field="--cert") from None
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        raise InvalidInput("is not an unencrypted PEM private key", field="--key-file") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise InvalidInput("must be an RSA or EC key", field="--key-file")
    public = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(*public) != certificate.public_key().public_bytes(*public):
        raise InvalidInput("is not the certificate's private key", field="--key-file")
    try:
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        constraints = None
    if constraints is None or not constraints.ca:
        raise InvalidInput("is not a CA certificate (basicConstraints CA:TRUE)", field="--cert")
    key_bytes = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _store(keys, company_id, certificate, key_bytes)
    return summary(certificate)


def show(keys: KeyStore, company_id: str) -> CaSummary | None:
    path = keys.directory / certificate_name(company_id)
    if not path.exists():
        return None
    return summary(x509.load_pem_x509_certificate(path.read_bytes()))


def signing_pair(
    keys: KeyStore, company_id: str
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey] | None:
    """The company's CA certificate and its private key, to sign its stations' certificates; None without a CA."""
    certificate_path = keys.directory / certificate_name(company_id)
    if not certificate_path.exists():
        return None
    certificate = x509.load_pem_x509_certificate(certificate_path.read_bytes())
    key = serialization.load_pem_private_key((keys.directory / key_name(company_id)).read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        return None  # `create` and `import_ca` keep no other kind
    return certificate, key


def summary(certificate: x509.Certificate) -> CaSummary:
    digest = hashlib.sha256(certificate.public_bytes(serialization.Encoding.DER)).hexdigest().upper()
    return CaSummary(
        subject=certificate.subject.rfc4514_string(),
        not_after=certificate.not_valid_after_utc,
        fingerprint=":".join(digest[i : i + 2] for i in range(0, len(digest), 2)),
        certificate_pem=certificate.public_bytes(serialization.Encoding.PEM).decode(),
    )


def _store(keys: KeyStore, company_id: str, certificate: x509.Certificate, key_pem: bytes) -> None:
    (keys.directory / FOLDER).mkdir(parents=True, exist_ok=True, mode=0o700)
    keys.write_private(key_name(company_id), key_pem)
    # The certificate last: a reader that sees it finds its key beside it.
    keys.write_private(certificate_name(company_id), certificate.public_bytes(serialization.Encoding.PEM))


class StationCaReader:
    """The companies' CA certificates as the handshake needs them: parsed once, read again when the file changes."""

    def __init__(self, keys: KeyStore) -> None:
        self._keys = keys
        self._cache: dict[str, tuple[tuple[int, int], x509.Certificate]] = {}

    def certificate(self, company_id: str) -> x509.Certificate | None:
        return self._read(certificate_name(company_id))

    def upstream_certificate(self, site_id: str) -> x509.Certificate | None:
        """The CA of the site's upstream (`import_upstream_ca`), for a site that relays its stations' CSRs."""
        return self._read(upstream_certificate_name(site_id))

    def _read(self, name: str) -> x509.Certificate | None:
        path: Path = self._keys.directory / name
        try:
            status = path.stat()
        except FileNotFoundError:
            self._cache.pop(name, None)
            return None
        version = (status.st_mtime_ns, status.st_ino)  # an import replaces the file: a new inode
        cached = self._cache.get(name)
        if cached is not None and cached[0] == version:
            return cached[1]
        certificate = x509.load_pem_x509_certificate(path.read_bytes())
        self._cache[name] = (version, certificate)
        return certificate
