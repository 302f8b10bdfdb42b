"""Certificate signing requests from stations (OCPP SignCertificate) and the certificates signed for them.

A CSR is signed by the company's station CA only when: it is a PEM PKCS#10 request whose signature verifies with
its own key; its subject CN is what a profile 3 handshake expects (the station id, or the record's serial number),
and its O is the company's organisation name when the company has one set (decisions.md "Security profiles",
`security_profiles.Expectations`); its key is RSA of at least 2048 bits or EC on P-256 or P-384; and it asks for a
charging station certificate. A V2G (ISO 15118) certificate is never signed by the station CA.

A signed certificate is valid for `VALIDITY` (a year) from five minutes ago (clocks of stations drift), carries a
random serial, the CA's key identifier, and says it is a TLS client's (extendedKeyUsage clientAuth), not a CA's.
Nothing here reads or writes: the CA's certificate and key are given.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from chargenet.domain.security_profiles import Expectations

VALIDITY = timedelta(days=365)
BACKDATE = timedelta(minutes=5)
MAX_CSR_CHARACTERS = 5500  # SignCertificate's `csr` in both generations
MIN_RSA_BITS = 2048
ALLOWED_CURVES = frozenset({"secp256r1", "secp384r1"})


class CertificateKind(Enum):
    """What a station asks to have signed: 2.0.1's `certificateType`; a 1.6 CSR is always the station's own."""

    CHARGING_STATION = "ChargingStationCertificate"
    V2G = "V2GCertificate"


class CsrRefusal(Enum):
    """Why a CSR is not signed; the value is the log's and the metrics' word."""

    UNREADABLE = "unreadable"
    BAD_SIGNATURE = "bad_signature"
    WRONG_COMMON_NAME = "wrong_common_name"
    WRONG_ORGANISATION = "wrong_organisation"
    WEAK_KEY = "weak_key"
    V2G = "v2g"
    NO_STATION_CA = "no_station_ca"

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    CsrRefusal.UNREADABLE: "the CSR is not a PEM certificate signing request",
    CsrRefusal.BAD_SIGNATURE: "the CSR's signature does not verify with its own key",
    CsrRefusal.WRONG_COMMON_NAME: "the CSR's CN is not the station's",
    CsrRefusal.WRONG_ORGANISATION: "the CSR's O is not the company's organisation name",
    CsrRefusal.WEAK_KEY: "the CSR's key is not RSA of 2048 bits or more, nor EC on P-256 or P-384",
    CsrRefusal.V2G: "a V2G (ISO 15118) certificate is never signed by the station CA",
    CsrRefusal.NO_STATION_CA: "the station's company has no station CA",
}


class CsrRefused(Exception):
    def __init__(self, refusal: CsrRefusal) -> None:
        super().__init__(refusal.description)
        self.refusal = refusal


def parse_kind(value: object) -> CertificateKind:
    """2.0.1's `certificateType`, absent meaning the station's own certificate."""
    if value is None:
        return CertificateKind.CHARGING_STATION
    return CertificateKind(value)


def check_request(pem: str, expected: Expectations, kind: CertificateKind) -> x509.CertificateSigningRequest:
    """The CSR, when the station CA may sign it; `CsrRefused` with the first rule it breaks otherwise."""
    if kind is not CertificateKind.CHARGING_STATION:
        raise CsrRefused(CsrRefusal.V2G)
    if len(pem) > MAX_CSR_CHARACTERS:
        raise CsrRefused(CsrRefusal.UNREADABLE)
    try:
        request = x509.load_pem_x509_csr(pem.encode())
        valid = request.is_signature_valid
    except (ValueError, UnicodeEncodeError, TypeError):
        raise CsrRefused(CsrRefusal.UNREADABLE) from None
    if not valid:
        raise CsrRefused(CsrRefusal.BAD_SIGNATURE)
    if _first(request.subject, NameOID.COMMON_NAME) != expected.common_name:
        raise CsrRefused(CsrRefusal.WRONG_COMMON_NAME)
    if expected.organisation is not None and _first(request.subject, NameOID.ORGANIZATION_NAME) != (
        expected.organisation
    ):
        raise CsrRefused(CsrRefusal.WRONG_ORGANISATION)
    if not is_strong(request.public_key()):
        raise CsrRefused(CsrRefusal.WEAK_KEY)
    return request


def is_strong(key: object) -> bool:
    if isinstance(key, rsa.RSAPublicKey):
        return key.key_size >= MIN_RSA_BITS
    if isinstance(key, ec.EllipticCurvePublicKey):
        return key.curve.name in ALLOWED_CURVES
    return False


CaKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def sign(
    request: x509.CertificateSigningRequest, ca_certificate: x509.Certificate, ca_key: CaKey, *, now: datetime
) -> x509.Certificate:
    """The station's certificate: the CSR's subject and key, issued by the CA (a request already checked)."""
    public_key = request.public_key()
    assert isinstance(public_key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey)  # `check_request` made sure
    ca_key_id = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())
    not_after = min(now + VALIDITY, ca_certificate.not_valid_after_utc)  # never outliving its issuer
    return (
        x509.CertificateBuilder()
        .subject_name(request.subject)
        .issuer_name(ca_certificate.subject)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=isinstance(public_key, rsa.RSAPublicKey),
                data_encipherment=False,
                key_agreement=isinstance(public_key, ec.EllipticCurvePublicKey),
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(ca_key_id, critical=False)
        .sign(ca_key, hashes.SHA256())
    )


@dataclass(frozen=True, slots=True)
class CertificateFacts:
    """What is kept of a signed certificate."""

    serial: str  # hex, upper case
    subject: str
    not_after: datetime
    fingerprint: str  # SHA-256 of the DER certificate, hex with colons


def facts_of(certificate: x509.Certificate) -> CertificateFacts:
    return CertificateFacts(
        serial=format(certificate.serial_number, "X"),
        subject=certificate.subject.rfc4514_string(),
        not_after=certificate.not_valid_after_utc,
        fingerprint=fingerprint(certificate),
    )


def fingerprint(certificate: x509.Certificate) -> str:
    digest = hashlib.sha256(certificate.public_bytes(serialization.Encoding.DER)).hexdigest().upper()
    return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))


def chain_pem(certificate: x509.Certificate, ca_certificate: x509.Certificate) -> str:
    """CertificateSigned's `certificateChain`: the station's certificate, then the CA that issued it."""
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in (certificate, ca_certificate)).decode()


def renewal_due(not_after: datetime, *, now: datetime, ahead: timedelta) -> bool:
    """Whether a certificate expiring at `not_after` is to be renewed by now (`ahead` of its expiry)."""
    return not_after - now <= ahead


def _first(name: x509.Name, oid: x509.ObjectIdentifier) -> str | None:
    found = name.get_attributes_for_oid(oid)
    value = found[0].value if found else None
    return value if isinstance(value, str) else None
