"""`chargenet serve` as an operator runs it: a real process, real HTTP on loopback, real signals."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


def chargenet(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "chargenet", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


# A bound, not a wait: the loop returns at the first answer. Generous because a server (the demo: its set-up,
# its simulators) starting on a machine busy with the rest of the suite has been seen to take over 30 s.
HEALTH_WITHIN = 120


def wait_for_health(port: int, process: subprocess.Popen[str]) -> httpx.Response:
    deadline = time.monotonic() + HEALTH_WITHIN
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited early: {process.communicate()[1]}")
        try:
            return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"server did not answer /health within {HEALTH_WITHIN} s")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    port = free_port()
    process = chargenet("serve", "--port", str(port), "--data-dir", str(tmp_path / "data"), "--log-format", "json")
    try:
        yield port, process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


@pytest.mark.slow
def test_serve_answers_health_and_stops_gracefully_on_sigterm(served: tuple[int, subprocess.Popen[str]]) -> None:
    port, process = served
    response = wait_for_health(port, process)
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert httpx.get(f"http://127.0.0.1:{port}/metrics").headers["content-type"].startswith("text/plain")
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=20)
    assert process.returncode == 0
    assert '"message": "chargenet stopped"' in err


@pytest.mark.slow
def test_serve_stops_gracefully_on_sigint(served: tuple[int, subprocess.Popen[str]]) -> None:
    port, process = served
    wait_for_health(port, process)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=20)
    assert process.returncode == 0


@pytest.mark.slow
def test_api_errors_are_problem_json(served: tuple[int, subprocess.Popen[str]]) -> None:
    port, process = served
    wait_for_health(port, process)
    response = httpx.get(f"http://127.0.0.1:{port}/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == 404
    assert httpx.get(f"http://127.0.0.1:{port}/api/v1/openapi.json").status_code == 200


@pytest.mark.slow
def test_unreachable_database_is_a_clear_error_and_nonzero_exit(tmp_path: Path) -> None:
    process = chargenet(
        "serve", "--data-dir", str(tmp_path), "--database-url", "postgresql://chargenet:secret@127.0.0.1:1/x"
    )
    _, err = process.communicate(timeout=60)
    assert process.returncode == 3
    assert "cannot reach the database" in err and "127.0.0.1:1" in err
    assert "Traceback" not in err and "secret" not in err


@pytest.mark.slow
def test_invalid_setting_is_named_and_nonzero_exit(tmp_path: Path) -> None:
    process = chargenet("serve", "--data-dir", str(tmp_path), env={"CHARGENET_PORT": "http"})
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert "CHARGENET_PORT: 'http' is not a port number" in err


@pytest.mark.slow
def test_keys_of_another_installation_are_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    created = chargenet("admin", "company", "create", "Acme", "--data-dir", str(data))
    created.communicate(timeout=60)
    assert created.returncode == 0
    shutil.rmtree(data / "keys")
    process = chargenet("admin", "company", "list", "--data-dir", str(data))
    _, err = process.communicate(timeout=60)
    assert process.returncode == 3
    assert "not the ones this database was set up with" in err


def self_signed(directory: Path) -> tuple[Path, Path]:
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@pytest.mark.slow
def test_tls_certificate_and_key_serve_https_on_the_one_port(tmp_path: Path) -> None:
    import ssl

    cert, key = self_signed(tmp_path)
    port = free_port()
    process = chargenet(
        "serve",
        "--port",
        str(port),
        "--data-dir",
        str(tmp_path / "data"),
        "--tls-cert",
        str(cert),
        "--tls-key",
        str(key),
    )
    try:
        context = ssl.create_default_context(cafile=str(cert))
        deadline = time.monotonic() + 30
        while True:
            try:
                response = httpx.get(f"https://localhost:{port}/health", verify=context, timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and process.poll() is None, "HTTPS server did not come up"
                time.sleep(0.1)
        assert response.status_code == 200
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
    finally:
        process.terminate()
        process.communicate(timeout=20)
