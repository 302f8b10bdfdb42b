"""docs/operating.md, run: every `sh` block of the guide, in order, in one shell, as root, on a scratch copy of the
machine's folders.

What differs from a real machine, and nothing else: the folders the guide names are under a scratch root
(`stand_ins.to_sandbox`); its ports 8081 and 8082 are free ports and its PostgreSQL at 127.0.0.1:5432 is a
throwaway server whose superuser is `postgres` (reached over TCP: the PG* variables, which `runuser` keeps, stand
in for Debian's local peer authentication); `systemctl` and `nginx -t` are the stand-ins of
tests/support/stand_ins.py, since CI has no systemd; `apt-get install` upgrades nothing already installed; and
the working folder is a copy of the checkout's files.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.deploy import OPERATING, ROOT, ensure_service_user, self_signed
from tests.support.ports import free_port
from tests.support.postgres import PostgresUnavailable, ThrowawayPostgres
from tests.support.stand_ins import stop_all, to_sandbox

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the guide's commands are run as root, as CI runs"),
]


SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def commands(markdown: str) -> list[str]:
    """The guide's `sh` blocks, in order."""
    return re.findall(r"^```sh\n(.*?)^```$", markdown, flags=re.S | re.M)


@pytest.fixture
def scratch_root() -> Iterator[Path]:
    # Not under pytest's temporary folder, which only root may enter: the service's user reads its folders.
    root = Path(tempfile.mkdtemp(prefix="chargenet-doc-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        stop_all(root)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_server() -> Iterator[ThrowawayPostgres]:
    server = ThrowawayPostgres(user="postgres")
    try:
        server.start()
    except PostgresUnavailable as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


def machine(root: Path) -> Path:
    """The scratch root as Debian leaves it once the guide's packages are installed; returns the working folder,
    a copy of the checkout's files."""
    shutil.copytree("/etc/nginx", root / "etc" / "nginx", symlinks=True)
    for folder in ("etc/systemd/system", "usr/local/sbin", "var/tmp", "var/log/nginx", "root", "run", "bin"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "root").chmod(0o700)
    certificates = root / "etc" / "ssl" / "chargenet"
    certificates.mkdir(parents=True)
    self_signed(certificates)
    for tool in ("systemctl", "nginx"):
        stand_in = root / "bin" / tool
        stand_in.write_text(
            f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -P -m tests.support.stand_ins {tool} "$@"\n'
        )
        stand_in.chmod(0o755)
    checkout = root / "src"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, checkout / name)
    return checkout


@pytest.mark.timeout(420)
def test_every_command_of_the_operating_guide_runs_in_order(
    postgres_server: ThrowawayPostgres, scratch_root: Path
) -> None:
    ensure_service_user()
    checkout = machine(scratch_root)
    first, second = free_port(), free_port()
    script = "\n".join(commands(OPERATING.read_text()))
    script = to_sandbox(script, scratch_root)
    script = script.replace("127.0.0.1:5432", f"127.0.0.1:{postgres_server.port}")
    script = script.replace("8081", str(first)).replace("8082", str(second))
    # This machine is shared: what the guide installs is installed here already, and nothing else is upgraded.
    script = script.replace("apt-get install -y ", "apt-get install --no-upgrade -y ", 1)
    env = {
        "PATH": f"{scratch_root}/bin:{scratch_root}/usr/local/sbin:{SYSTEM_PATH}",
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "DEBIAN_FRONTEND": "noninteractive",
        "CHARGENET_DOC_ROOT": str(scratch_root),
        "PGHOST": "127.0.0.1",
        "PGPORT": str(postgres_server.port),
        "PGUSER": "postgres",
        "PGPASSWORD": postgres_server.password,
        # The machine's own pip settings (its package index), as an operator's pip would use them.
        **{key: value for key, value in os.environ.items() if key.startswith("PIP_")},
    }
    ran = subprocess.run(
        ["bash", "-euo", "pipefail", "-x", "-c", script],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert ran.returncode == 0, f"{ran.stderr[-6000:]}\n{ran.stdout[-2000:]}"
    # The restore drill read the company back from the restored database with the restored keys.
    assert '"name": "Acme Charging"' in ran.stdout
    # The station's certificate chains to the company's station CA, and the station was raised to profile 3.
    assert "CS-0042.crt: OK" in ran.stdout and '"securityProfile": 3' in ran.stdout
    url_file = scratch_root / "etc" / "chargenet" / "database-url"
    assert oct(url_file.stat().st_mode & 0o777) == "0o640"
    assert len(list((scratch_root / "var" / "backups" / "chargenet").glob("keys-*.tar.gz"))) >= 1
