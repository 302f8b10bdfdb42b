"""The production files in deploy/ as the tests read them: the systemd unit's settings, its user, its command.

CI runs as root without systemd, so a test does what systemd would for the unit's `User=`, `EnvironmentFile=` and
`ExecStart=`: it makes the system user as docs/operating.md does and runs the command line as that user, with
that file's settings and no new privileges.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import ipaddress
import pwd
import shlex
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "chargenet.service"
NGINX_SITE = ROOT / "deploy" / "nginx" / "chargenet.conf"
OPERATING = ROOT / "docs" / "operating.md"
SERVICE_USER = "chargenet"
# Where docs/operating.md installs chargenet; here, the checkout's own virtual environment stands in for it.
INSTALLED = "/opt/chargenet"
VENV = ROOT / ".venv"
ADD_SERVICE_USER = ["adduser", "--system", "--group", "--home", "/nonexistent", "--no-create-home", SERVICE_USER]


def unit_settings(text: str, section: str = "Service") -> dict[str, list[str]]:
    """Each key of `section` with its values in order (a key may be given several times)."""
    found: dict[str, list[str]] = {}
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            continue
        if current == section:
            key, _, value = line.partition("=")
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def environment_file(path: Path) -> dict[str, str]:
    """The variables of a systemd `EnvironmentFile=` (KEY=VALUE lines; comments and blank lines ignored)."""
    values: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip().strip('"')
    return values


def ensure_service_user() -> pwd.struct_passwd:
    """The unit's system user, made with docs/operating.md's command when missing (one process at a time)."""
    with open(Path(tempfile.gettempdir()) / "chargenet-test-adduser.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(ADD_SERVICE_USER, check=True, capture_output=True)
    return pwd.getpwnam(SERVICE_USER)


def service_environment(owner: pwd.struct_passwd, settings_file: Path) -> dict[str, str]:
    """The environment systemd gives a unit's process: its user's, and its `EnvironmentFile=`'s."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": owner.pw_dir,
        "USER": owner.pw_name,
        "LOGNAME": owner.pw_name,
        "SHELL": owner.pw_shell,
    }
    env.update(environment_file(settings_file))
    return env


def exec_start(settings: Mapping[str, list[str]]) -> list[str]:
    """The unit's command line, run from the checkout's virtual environment instead of the installed one."""
    (line,) = settings["ExecStart"]
    argv = shlex.split(line)
    assert argv[0].startswith(f"{INSTALLED}/bin/"), argv[0]
    return [str(VENV / argv[0].removeprefix(f"{INSTALLED}/")), *argv[1:]]


def as_user(owner: pwd.struct_passwd, argv: list[str]) -> list[str]:
    """`argv` run as `owner` with no other group and no way to gain privileges (the unit's `NoNewPrivileges=`)."""
    return [
        "setpriv",
        f"--reuid={owner.pw_uid}",
        f"--regid={owner.pw_gid}",
        "--clear-groups",
        "--no-new-privs",
        "--",
        *argv,
    ]


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A throwaway certificate for 127.0.0.1 and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "chargenet test proxy")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "fullchain.pem", folder / "privkey.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path
