"""What a command line imports: `chargenet ARGS` run by `main` in a fresh interpreter, which reports every module
it holds once the command is done (the test process itself has imported nearly everything long ago)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The libraries only serving needs (the web stack, HTTP clients, Modbus, migrations, PostgreSQL's driver, metrics, key
# cryptography, templates, password hashing): no command line that only parses, nor one that lists, loads them.
SERVING_LIBRARIES = (
    "fastapi",
    "starlette",
    "uvicorn",
    "httpx",
    "httpcore",
    "websockets",
    "pymodbus",
    "alembic",
    "asyncpg",
    "prometheus_client",
    "cryptography",
    "joserfc",
    "jinja2",
    "argon2",
)

_REPORT = """
import contextlib, io, json, sys
from chargenet.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exit:  # --help
        code = exit.code
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


@dataclass(frozen=True)
class Imported:
    code: int
    out: str
    modules: frozenset[str]

    def of(self, *prefixes: str) -> list[str]:
        """The modules loaded that are one of `prefixes` or inside one of them."""
        return sorted(m for m in self.modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def imported_by(*args: str) -> Imported:
    done = subprocess.run(
        [sys.executable, "-c", _REPORT, *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    report = json.loads(done.stdout)
    return Imported(report["code"], report["out"], frozenset(report["modules"]))
