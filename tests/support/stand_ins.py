"""`systemctl` and `nginx -t` for running docs/operating.md's commands where there is no systemd, on a scratch copy
of the machine's folders (`CHARGENET_DOC_ROOT`): `python -m tests.support.stand_ins systemctl|nginx ARGS`.

The commands in the guide name the real folders (/etc/chargenet, /opt/chargenet...); the test runs them with
those names moved under the scratch root (`to_sandbox`), and these stand-ins read what the guide installed (the
unit file, the nginx site, both copied unchanged from the repository) with the same names moved:
- `systemctl start|enable --now UNIT...` does what systemd does with the unit: makes its `StateDirectory=`, runs
  its `ExecStart=` as its `User=` with its `EnvironmentFile=`, without new privileges, and returns once the command
  runs, before it listens (as for the unit's `Type=exec`); `stop` sends SIGTERM and waits for the process to end.
- `nginx -t` checks Debian's nginx.conf with the enabled sites, as installed in the scratch root, with Debian's
  nginx; `systemctl reload nginx` does the same check (the proxying itself is tested in test_nginx.py).
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.deploy import as_user, environment_file, unit_settings

# The folders the guide names, moved under the scratch root when the test runs its commands.
SANDBOXED = (
    "/etc/chargenet",
    "/etc/nginx",
    "/etc/ssl/chargenet",
    "/etc/systemd/system",
    "/opt/chargenet",
    "/root/owner-password",
    "/root/stations",
    "/usr/local/sbin",
    "/var/backups/chargenet",
    "/var/lib/chargenet",
    "/var/log/nginx",
    "/var/tmp/chargenet-drill",
    "/run/nginx.pid",
)
_PATHS = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(path) for path in SANDBOXED) + r")(?=[/\s'\";|)]|$)", re.M)


def to_sandbox(text: str, root: Path) -> str:
    """`text` with every path of SANDBOXED moved under `root`."""
    return _PATHS.sub(lambda found: f"{root}{found.group(1)}", text)


def _root() -> Path:
    return Path(os.environ["CHARGENET_DOC_ROOT"])


def _pid_file(root: Path, unit: str) -> Path:
    return root / "run" / f"{unit}.service.pid"


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")  # an ended process nobody has reaped yet counts as ended


def start(unit: str) -> None:
    root = _root()
    text = to_sandbox((root / "etc" / "systemd" / "system" / f"{unit}.service").read_text(), root)
    settings = unit_settings(text)
    (user,) = settings["User"]
    owner = pwd.getpwnam(user)
    for name in settings.get("StateDirectory", []):
        state = root / "var" / "lib" / name
        state.mkdir(mode=0o750, parents=True, exist_ok=True)
        os.chown(state, owner.pw_uid, owner.pw_gid)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": owner.pw_dir, "USER": user, "LOGNAME": user}
    for path in settings["EnvironmentFile"]:
        env.update(environment_file(Path(path)))
    (command,) = settings["ExecStart"]
    (root / "run").mkdir(exist_ok=True)
    log = root / "run" / f"{unit}.log"
    with log.open("ab") as journal:
        process = subprocess.Popen(
            as_user(owner, shlex.split(command)),
            env=env,
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=journal,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _pid_file(root, unit).write_text(str(process.pid))
    # Returns at once, as `systemctl start` of a Type=exec unit does once the command runs: the guide waits for
    # the port itself. A command that fails at once is reported here, with its journal.
    time.sleep(0.5)
    if process.poll() is not None:
        sys.exit(f"{unit} did not start:\n{log.read_text(errors='replace')[-3000:]}")


def stop(unit: str) -> None:
    pid_file = _pid_file(_root(), unit)
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text())
    if _running(pid):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while _running(pid):
        if time.monotonic() > deadline:
            sys.exit(f"{unit} did not stop within 30 s")
        time.sleep(0.05)
    pid_file.unlink()


def stop_all(root: Path) -> None:
    """Kill whatever the stand-in started under `root` and is still running (a test's clean-up)."""
    for pid_file in (root / "run").glob("*.service.pid"):
        pid = int(pid_file.read_text())
        if _running(pid):
            os.kill(pid, signal.SIGKILL)


def nginx_check() -> None:
    """`nginx -t` on the scratch root's /etc/nginx, every file's paths moved under the scratch root."""
    root = _root()
    installed, checked = root / "etc" / "nginx", root / "run" / "nginx-check"
    shutil.rmtree(checked, ignore_errors=True)
    for path in installed.rglob("*"):
        target = checked / path.relative_to(installed)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.exists():  # a link to a missing file is skipped, as nginx's include skips nothing but errs
            target.parent.mkdir(parents=True, exist_ok=True)
            moved = to_sandbox(path.read_text(), root).replace(str(installed), str(checked))
            target.write_text(moved)
    (root / "var" / "log" / "nginx").mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [
            "nginx",
            "-t",
            "-q",
            "-c",
            str(checked / "nginx.conf"),
            "-e",
            str(root / "var" / "log" / "nginx" / "error.log"),
        ],
        env={**os.environ, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        check=False,
    )
    if result.returncode != 0:
        sys.exit(result.returncode)


def systemctl(args: list[str]) -> None:
    verb, *rest = args
    units = [unit.removesuffix(".service") for unit in rest if not unit.startswith("--")]
    if verb == "daemon-reload":
        return
    if verb in ("reload", "restart") and units == ["nginx"]:
        nginx_check()
        return
    if verb == "start" or (verb == "enable" and "--now" in rest):
        for unit in units:
            start(unit)
        return
    if verb == "stop":
        for unit in units:
            stop(unit)
        return
    if verb == "restart":
        for unit in units:
            stop(unit)
            start(unit)
        return
    sys.exit(f"the systemctl stand-in does not know {' '.join(args)!r}")


def main(argv: list[str]) -> None:
    tool, *args = argv
    if tool == "systemctl":
        systemctl(args)
    elif tool == "nginx" and args == ["-t"]:
        nginx_check()
    else:
        sys.exit(f"no stand-in for {' '.join(argv)!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
