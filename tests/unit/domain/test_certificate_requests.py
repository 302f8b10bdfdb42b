"""The station CA signs a station's CSR only when it names the station, has a strong key and is the station's own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from chargenet.domain.certificate_requests import (
    VALIDITY,
    CertificateKind,
    CsrRefusal,
    CsrRefused,
    chain_pem,
    check_request,
    facts_of,
    parse_kind,
    renewal_due,
    sign,
)
from chargenet.domain.security_profiles import Expectations
from tests.support.certificates import make_ca, make_csr

NOW = datetime(2026, 11, 1, tzinfo=UTC)
STATION = Expectations(common_name="CS-1", organisation=None)
STATION_OF_ACME = Expectations(common_name="CS-1", organisation="Acme NV")
OWN = CertificateKind.CHARGING_STATION


def refusal(pem: str, expected: Expectations = STATION, kind: CertificateKind = OWN) -> CsrRefusal:
    with pytest.raises(CsrRefused) as refused:
        check_request(pem, expected, kind)
    return refused.value.refusal


def test_a_good_csr_is_signed_for_a_year_as_a_client_certificate_of_the_ca() -> None:
    ca = make_ca("Acme station CA")
    csr = make_csr("CS-1", organisation="Acme NV")
    certificate = sign(check_request(csr.pem, STATION_OF_ACME, OWN), ca.certificate, ca.key, now=NOW)
    certificate.verify_directly_issued_by(ca.certificate)
    assert certificate.subject == x509.load_pem_x509_csr(csr.pem.encode()).subject
    assert certificate.not_valid_after_utc == min(NOW + VALIDITY, ca.certificate.not_valid_after_utc)
    assert not certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    usage = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    facts = facts_of(certificate)
    assert facts.serial == format(certificate.serial_number, "X") and len(facts.fingerprint) == 95
    chain = x509.load_pem_x509_certificates(chain_pem(certificate, ca.certificate).encode())
    assert chain == [certificate, ca.certificate]


def test_two_signings_never_share_a_serial() -> None:
    ca = make_ca()
    request = check_request(make_csr("CS-1").pem, STATION, OWN)
    assert (
        sign(request, ca.certificate, ca.key, now=NOW).serial_number
        != sign(request, ca.certificate, ca.key, now=NOW).serial_number
    )


def test_rsa_2048_and_ec_p384_keys_are_strong_enough() -> None:
    for key in (rsa.generate_private_key(65537, 2048), ec.generate_private_key(ec.SECP384R1())):
        check_request(make_csr("CS-1", key=key).pem, STATION, OWN)


def test_a_csr_naming_another_station_is_refused() -> None:
    assert refusal(make_csr("CS-2").pem) is CsrRefusal.WRONG_COMMON_NAME


def test_a_csr_with_another_organisation_is_refused_once_the_company_names_its_own() -> None:
    assert refusal(make_csr("CS-1", organisation="Other NV").pem, STATION_OF_ACME) is CsrRefusal.WRONG_ORGANISATION
    assert refusal(make_csr("CS-1").pem, STATION_OF_ACME) is CsrRefusal.WRONG_ORGANISATION
    check_request(make_csr("CS-1", organisation="Other NV").pem, STATION, OWN)


def test_weak_keys_are_refused() -> None:
    weak = (rsa.generate_private_key(65537, 1024), ec.generate_private_key(ec.SECP256K1()))
    assert [refusal(make_csr("CS-1", key=key).pem) for key in weak] == [CsrRefusal.WEAK_KEY] * 2


def test_garbage_instead_of_a_pem_csr_is_refused_as_unreadable() -> None:
    certificate_pem = make_ca().certificate_pem.decode()
    for garbage in ("hello", "", certificate_pem, "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n", "x" * 6000):
        assert refusal(garbage) is CsrRefusal.UNREADABLE


def test_a_csr_whose_signature_does_not_verify_is_refused() -> None:
    good = make_csr("CS-1", key=rsa.generate_private_key(65537, 2048)).pem
    der = bytearray(x509.load_pem_x509_csr(good.encode()).public_bytes(serialization.Encoding.DER))
    der[-1] ^= 0x01  # the last byte of an RSA signature: the request still reads, its signature no longer holds
    pem = x509.load_der_x509_csr(bytes(der)).public_bytes(serialization.Encoding.PEM).decode()
    assert refusal(pem) is CsrRefusal.BAD_SIGNATURE


def test_a_v2g_csr_is_never_signed_by_the_station_ca() -> None:
    assert refusal(make_csr("CS-1").pem, kind=parse_kind("V2GCertificate")) is CsrRefusal.V2G
    assert parse_kind(None) is OWN


def test_renewal_is_due_within_the_time_ahead_of_expiry() -> None:
    ahead = timedelta(days=30)
    assert renewal_due(NOW + timedelta(days=30), now=NOW, ahead=ahead)
    assert not renewal_due(NOW + timedelta(days=31), now=NOW, ahead=ahead)
