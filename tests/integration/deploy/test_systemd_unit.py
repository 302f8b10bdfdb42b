"""deploy/chargenet.service: systemd's own checker accepts it, and its command, run as its unprivileged user with
its settings and credential handed over as systemd would, serves."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.deploy import (
    INSTALLED,
    UNIT,
    VENV,
    as_user,
    ensure_service_user,
    exec_start,
    service_environment,
    unit_settings,
)
from tests.support.ports import free_port

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switching to the service's user needs root, as CI runs")


def verify(unit: Path, root: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze verify` of `unit` installed under `root`, a machine with chargenet installed where
    docs/operating.md puts it, and systemd's own units (the unit's dependencies) as Debian ships them."""
    units = root / "etc" / "systemd" / "system"
    units.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(unit, units / unit.name)
    if not (root / "usr" / "lib" / "systemd" / "system").exists():
        shutil.copytree("/usr/lib/systemd/system", root / "usr" / "lib" / "systemd" / "system", symlinks=True)
        command = root / INSTALLED.lstrip("/") / "bin" / "chargenet"
        command.parent.mkdir(parents=True)
        shutil.copyfile(VENV / "bin" / "chargenet", command)
        command.chmod(0o755)
    return subprocess.run(
        ["systemd-analyze", "verify", f"--root={root}", unit.name], capture_output=True, text=True, check=False
    )


def test_systemd_analyze_verify_accepts_the_unit_without_a_warning(tmp_path: Path) -> None:
    checked = verify(UNIT, tmp_path / "root")
    assert (checked.returncode, checked.stderr) == (0, "")


def test_systemd_analyze_verify_reports_a_misspelt_setting(tmp_path: Path) -> None:
    misspelt = tmp_path / "chargenet.service"
    misspelt.write_text(UNIT.read_text().replace("ProtectSystem=strict", "ProtectSystm=strict"))
    checked = verify(misspelt, tmp_path / "root")
    assert "Unknown key 'ProtectSystm'" in checked.stderr


def test_the_unit_runs_as_its_own_user_with_no_new_privileges_and_writes_only_its_data_folder() -> None:
    settings = unit_settings(UNIT.read_text())
    assert settings["User"] == settings["Group"] == ["chargenet"]
    assert settings["NoNewPrivileges"] == ["yes"]
    assert settings["ProtectSystem"] == ["strict"]
    assert settings["StateDirectory"] == ["chargenet"]  # /var/lib/chargenet, made by systemd for the user
    assert settings["ReadWritePaths"] == ["/var/lib/chargenet"]
    assert settings["ProtectHome"] == settings["PrivateTmp"] == ["yes"]
    assert settings["Restart"] == ["on-failure"]


@pytest.fixture
def service_folder() -> Iterator[Path]:
    # Not under pytest's temporary folder, which only root may enter.
    folder = Path(tempfile.mkdtemp(prefix="chargenet-unit-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_units_command_run_as_its_user_serves_and_stops_cleanly(pg_url: str, service_folder: Path) -> None:
    owner = ensure_service_user()
    settings = unit_settings(UNIT.read_text())
    data = service_folder / "data"
    data.mkdir(mode=0o750)
    os.chown(data, owner.pw_uid, owner.pw_gid)
    port = free_port()
    # The database URL holds a password: only root and the service's group may read its file.
    url_file = service_folder / "database-url"
    url_file.write_text(pg_url + "\n")
    url_file.chmod(0o640)
    os.chown(url_file, 0, owner.pw_gid)
    settings_file = service_folder / "chargenet.env"
    settings_file.write_text(
        f"CHARGENET_HOST=127.0.0.1\nCHARGENET_PORT={port}\nCHARGENET_PUBLIC_URL=https://charge.example.org\n"
        f"CHARGENET_DATA_DIR={data}\nCHARGENET_DATABASE_URL_FILE={url_file}\nCHARGENET_LOG_LEVEL=warning\n"
    )
    log = service_folder / "journal"
    with log.open("w") as journal:
        process = subprocess.Popen(
            as_user(owner, exec_start(settings)),
            env=service_environment(owner, settings_file),
            cwd="/",
            stdout=journal,
            stderr=subprocess.STDOUT,
        )
    try:
        live = _live(process, f"http://127.0.0.1:{port}/health/live", log)
        assert live.json() == {"status": "live"}
        status = Path(f"/proc/{process.pid}/status").read_text()
        uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
        assert uid_line.split()[1:] == [str(owner.pw_uid)] * 4
        assert "NoNewPrivs:\t1" in status
        keys = data / "keys"
        assert keys.is_dir() and keys.stat().st_uid == owner.pw_uid
        # The address clients use is the proxy's https origin, not the one it listens on.
        discovery = httpx.get(f"http://127.0.0.1:{port}/auth/.well-known/openid-configuration", timeout=10)
        assert discovery.json()["issuer"] == "https://charge.example.org/auth"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _live(process: subprocess.Popen[bytes], url: str, log: Path) -> httpx.Response:
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise AssertionError(f"chargenet serve exited with {process.returncode}: {log.read_text()}")
        try:
            return httpx.get(url, timeout=1).raise_for_status()
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "chargenet serve did not answer within 60 s"
        time.sleep(0.1)
