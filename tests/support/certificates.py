"""Certificates made for tests with `cryptography`: a server's for loopback, CAs, and stations' signed by them."""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Issued:
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def certificate_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    @classmethod
    def load(cls, certificate_pem: bytes, key_pem: bytes) -> Issued:
        key = serialization.load_pem_private_key(key_pem, password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        return cls(x509.load_pem_x509_certificate(certificate_pem), key)

    def write(self, folder: Path, name: str) -> tuple[Path, Path]:
        """(certificate file, key file) in `folder`."""
        folder.mkdir(parents=True, exist_ok=True)
        certificate, key = folder / f"{name}.crt", folder / f"{name}.key"
        certificate.write_bytes(self.certificate_pem)
        key.write_bytes(self.key_pem)
        return certificate, key


def _name(common_name: str, organisation: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organisation:
        attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation))
    return x509.Name(attributes)


def make_ca(common_name: str = "Test station CA") -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )
    return Issued(certificate, key)


def issue(
    ca: Issued,
    common_name: str,
    *,
    organisation: str | None = None,
    expired: bool = False,
    server: bool = False,
) -> Issued:
    """A leaf `ca` signs: a station's client certificate, or (`server`) one for 127.0.0.1 and localhost."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC)
    start, end = (
        (now - timedelta(days=30), now - timedelta(days=1))
        if expired
        else (now - timedelta(days=1), now + timedelta(days=30))
    )
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, organisation))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
    )
    if server:
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return Issued(builder.sign(ca.key, hashes.SHA256()), key)


def client_context(trusted: Issued, folder: Path, shown: Issued | None = None) -> ssl.SSLContext:
    """A TLS client trusting `trusted` (the server's CA) and showing `shown`, if given, as its certificate."""
    context = ssl.create_default_context(cadata=trusted.certificate_pem.decode())
    if shown is not None:
        certificate, key = shown.write(folder, f"client-{shown.certificate.serial_number}")
        context.load_cert_chain(certificate, key)
    return context


StationKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def make_csr(common_name: str, *, organisation: str | None = None, key: StationKey | None = None) -> Csr:
    """A station's certificate signing request, as a station makes one for SignCertificate."""
    key = key or ec.generate_private_key(ec.SECP256R1())
    request = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(_name(common_name, organisation))
        .sign(key, hashes.SHA256())
    )
    return Csr(request.public_bytes(serialization.Encoding.PEM).decode(), key)


@dataclass(frozen=True)
class Csr:
    pem: str
    key: StationKey

    def issued(self, chain_pem: str) -> Issued:
        """The station's certificate from CertificateSigned's chain (its first), with the CSR's key."""
        certificate = x509.load_pem_x509_certificates(chain_pem.encode())[0]
        assert isinstance(self.key, ec.EllipticCurvePrivateKey)
        return Issued(certificate, self.key)
