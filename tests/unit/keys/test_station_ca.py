from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography import x509

from chargenet.edge.admission import certificate_facts
from chargenet.errors import Conflict, InvalidInput
from chargenet.keys import KeyStore, station_ca
from tests.support.certificates import issue, make_ca

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def test_a_created_station_ca_signs_for_the_company_and_its_key_is_private(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "keys")
    made = station_ca.create(keys, "co_1", "Acme Charging", now=NOW)
    key_file = tmp_path / "keys" / station_ca.key_name("co_1")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    certificate = x509.load_pem_x509_certificate(made.certificate_pem.encode())
    assert certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert "O=Acme Charging" in made.subject and made.not_after.year == 2036
    shown = station_ca.show(keys, "co_1")
    assert shown is not None and shown.fingerprint == made.fingerprint and len(made.fingerprint) == 95
    with pytest.raises(Conflict):
        station_ca.create(keys, "co_1", "Acme Charging", now=NOW)
    assert station_ca.show(keys, "co_2") is None


def test_an_imported_ca_replaces_the_one_the_handshake_reads(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "keys")
    reader = station_ca.StationCaReader(keys)
    assert reader.certificate("co_1") is None
    station_ca.create(keys, "co_1", "Acme Charging", now=NOW)
    created = reader.certificate("co_1")
    own = make_ca("Acme's own CA")
    station_ca.import_ca(keys, "co_1", own.certificate_pem, own.key_pem)
    assert reader.certificate("co_1") == own.certificate != created
    facts = certificate_facts(issue(own, "CS-1").certificate_pem.decode(), reader.certificate("co_1"))
    assert facts is not None and facts.issued_by_station_ca and facts.common_name == "CS-1"
    foreign = certificate_facts(issue(make_ca(), "CS-1").certificate_pem.decode(), reader.certificate("co_1"))
    assert foreign is not None and not foreign.issued_by_station_ca


def test_an_import_that_is_not_a_ca_with_its_own_key_is_refused_and_nothing_stored(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "keys")
    own, other = make_ca(), make_ca()
    leaf = issue(own, "CS-1")
    refused = [
        (b"garbage", own.key_pem, "--cert"),
        (own.certificate_pem, b"garbage", "--key-file"),
        (own.certificate_pem, other.key_pem, "--key-file"),
        (leaf.certificate_pem, leaf.key_pem, "--cert"),
    ]
    for certificate, key, field in refused:
        with pytest.raises(InvalidInput) as caught:
            station_ca.import_ca(keys, "co_1", certificate, key)
        assert caught.value.field == field
    assert station_ca.show(keys, "co_1") is None


def test_something_that_is_not_a_certificate_has_no_facts() -> None:
    assert certificate_facts("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n", None) is None
