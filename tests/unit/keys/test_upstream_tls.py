"""A site's TLS files for its upstream link in the keys folder (keys.upstream_tls)."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from chargenet.errors import InvalidInput
from chargenet.keys import KeyStore
from chargenet.keys import upstream_tls as files
from tests.support.certificates import issue, make_ca

NOW = datetime.now(UTC)


def test_a_client_certificate_is_kept_with_its_key_readable_by_the_owner_alone(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "keys")
    client = issue(make_ca(), "Depot")
    summary = files.store_client_certificate(keys, "site_1", client.certificate_pem, client.key_pem, now=NOW)
    assert summary.subject == "CN=Depot"
    assert summary.not_after == client.certificate.not_valid_after_utc
    key_file = keys.directory / "upstream-tls" / "site_1" / "client.key"
    assert key_file.read_bytes() == client.key_pem
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_a_key_that_is_not_the_certificates_is_refused(tmp_path: Path) -> None:
    ca = make_ca()
    with pytest.raises(InvalidInput, match="not the client certificate's private key"):
        files.check_client_certificate(issue(ca, "A").certificate_pem, issue(ca, "B").key_pem, now=NOW)


def test_an_expired_client_certificate_is_refused() -> None:
    client = issue(make_ca(), "Depot", expired=True)
    with pytest.raises(InvalidInput, match="not valid now"):
        files.check_client_certificate(client.certificate_pem, client.key_pem, now=NOW)


def test_a_ca_bundle_without_a_certificate_is_refused() -> None:
    with pytest.raises(InvalidInput, match="ca-bundle"):
        files.check_ca_bundle(b"not a certificate")
    assert files.check_ca_bundle(make_ca().certificate_pem + make_ca().certificate_pem) == 2


def test_a_sites_context_is_made_again_once_its_files_change(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "keys")
    contexts = files.UpstreamTlsContexts(keys)
    ca = make_ca()
    files.store_ca_bundle(keys, "site_1", ca.certificate_pem)
    first = contexts.context("site_1", client_certificate=False)
    assert contexts.context("site_1", client_certificate=False) is first
    files.store_ca_bundle(keys, "site_1", make_ca().certificate_pem)
    assert contexts.context("site_1", client_certificate=False) is not first


def test_missing_files_make_no_context(tmp_path: Path) -> None:
    contexts = files.UpstreamTlsContexts(KeyStore(tmp_path / "keys"))
    with pytest.raises(files.UpstreamTlsUnusable, match="site_1"):
        contexts.context("site_1", client_certificate=True)
