"""A throwaway PostgreSQL server for one test run: made in a temporary folder, started, and removed at the end.

Used when `CHARGENET_TEST_DATABASE_URL` is not set. `initdb` and `postgres` refuse to run as root, which is how
CI runs, so as root the server runs as the unprivileged `nobody` in a folder that user owns; otherwise as the
current user. It listens on loopback on a free port with a random password, and is tuned for tests (no fsync:
a crash of the test machine loses nothing worth keeping).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.ports import free_port

_UNPRIVILEGED = "nobody"
_READY_TIMEOUT_S = 30.0


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server could be made here; the message says what to install or set."""


def _version_key(path: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path))


def server_binaries() -> Path:
    """The folder holding `initdb` and `postgres`: Debian's newest `/usr/lib/postgresql/N/bin`, else the PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version_key)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is not None:
        return Path(initdb).resolve().parent
    raise PostgresUnavailable(
        "no PostgreSQL server is installed (initdb not found): run `make test`, which installs Debian's "
        "`postgresql` package, or point CHARGENET_TEST_DATABASE_URL at a server whose role may CREATE DATABASE"
    )


@dataclass
class ThrowawayPostgres:
    user: str = "chargenet"
    password: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    port: int = 0
    folder: Path | None = None
    _process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://{self.user}:{self.password}@127.0.0.1:{self.port}/postgres"

    def start(self) -> str:
        """Make and start the server; returns its SQLAlchemy URL (a superuser, the `postgres` database)."""
        binaries = server_binaries()
        as_root = os.geteuid() == 0
        owner = pwd.getpwnam(_UNPRIVILEGED) if as_root else None
        self.folder = Path(tempfile.mkdtemp(prefix="chargenet-pg-"))
        data, sockets = self.folder / "data", self.folder / "sockets"
        password_file = self.folder / "password"
        password_file.write_text(self.password + "\n")
        sockets.mkdir()
        if owner is not None:
            for path in (self.folder, sockets, password_file):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        self.folder.chmod(0o700)

        def as_server_user() -> dict[str, object]:
            if owner is None:
                return {}
            return {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": [], "env": _clean_env(owner)}

        log = self.folder / "server.log"
        initdb = subprocess.run(
            [
                str(binaries / "initdb"),
                "--pgdata",
                str(data),
                "--username",
                self.user,
                "--pwfile",
                str(password_file),
                "--auth",
                "scram-sha-256",
                "--encoding",
                "UTF8",
                # Case folds every letter (ILIKE finds "Über" for "über"), as a Debian server's default locale
                # does, while sorting stays by code point as with C.
                "--locale",
                "C.UTF-8",
                "--no-sync",
            ],
            capture_output=True,
            text=True,
            cwd=self.folder,
            **as_server_user(),  # type: ignore[arg-type]
        )
        if initdb.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {initdb.stderr.strip() or initdb.stdout.strip()}")
        password_file.unlink()
        self.port = free_port()
        log_handle = open(log, "wb")  # noqa: SIM115 - handed to the server process for its lifetime
        if owner is not None:
            os.chown(log, owner.pw_uid, owner.pw_gid)
        self._process = subprocess.Popen(
            [
                str(binaries / "postgres"),
                "-D",
                str(data),
                "-p",
                str(self.port),
                "-k",
                str(sockets),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "max_connections=300",
                "-c",
                "shared_buffers=128MB",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log_handle,
            stderr=subprocess.STDOUT,
            cwd=self.folder,
            start_new_session=True,
            **as_server_user(),  # type: ignore[arg-type]
        )
        log_handle.close()
        self._wait_ready(binaries, log)
        return self.url

    def _wait_ready(self, binaries: Path, log: Path) -> None:
        assert self._process is not None
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise PostgresUnavailable(f"postgres exited at start: {log.read_text(errors='replace')[-2000:]}")
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.settimeout(0.2)
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    ready = subprocess.run(
                        [str(binaries / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"],
                        check=False,
                    )
                    if ready.returncode == 0:
                        return
            time.sleep(0.05)
        self.stop()
        raise PostgresUnavailable(f"postgres did not accept connections within {_READY_TIMEOUT_S:.0f} s")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            # SIGINT is PostgreSQL's fast shutdown: sessions are ended, nothing is kept for the next start.
            self._process.send_signal(2)
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def _clean_env(owner: pwd.struct_passwd) -> dict[str, str]:
    # The server user cannot read root's home; PostgreSQL's tools look there for ~/.psqlrc-like files.
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    env.update(HOME=owner.pw_dir if os.path.isdir(owner.pw_dir) else "/", USER=owner.pw_name, LOGNAME=owner.pw_name)
    with contextlib.suppress(KeyError):
        del env["XDG_RUNTIME_DIR"]
    return env
