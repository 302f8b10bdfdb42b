"""A command's start: `chargenet admin company list` on a SQLite store of 20 companies, a process of its own each time
(target: 0.35 s on the 2-core machine), against interpreters in the same run that import what it cannot do without.

The floor is `python -c "import sqlalchemy"` (0.22 s on that machine, so the target is a ratio of 0.63 to it); the
command also needs SQLAlchemy's asyncio ORM, aiosqlite and pydantic, whose import alone is the second baseline. The
help of a verb and the completion script, which import neither, are compared with a bare interpreter. Every command
runs once a round, the rounds one after the other, and each figure is the median of its rounds, so that the machine's
moods fall on all of them alike.

The package's bytecode is compiled first, as installing it compiles it: otherwise, where PYTHONDONTWRITEBYTECODE is
set, every run would compile chargenet's modules from source (15 ms of the listing) while the libraries' came
compiled with them."""

from __future__ import annotations

import asyncio
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import Result
from chargenet.config import load_settings
from chargenet.context import open_store
from chargenet.services import companies
from chargenet.services.callers import OPERATOR

ROOT = Path(__file__).resolve().parents[1]
COMPANIES = 20
ROUNDS = 15
WARM_UP = 2
TARGET_SECONDS = 0.35
SQLALCHEMY_ON_THE_MACHINE = 0.22  # seconds `import sqlalchemy` takes on the 2-core machine the target was set on

# The libraries alone, the collector set as a command sets it (chargenet.collector).
LIBRARIES = (
    "from chargenet import collector; collector.tune_for_command(); "
    "import sqlalchemy.ext.asyncio, aiosqlite; from pydantic import BaseModel; collector.freeze_at_exit()"
)


async def _store(folder: str) -> None:
    context = await open_store(load_settings({"data_dir": folder}, environ={}))
    async with context.store.transaction() as session:
        for n in range(COMPANIES):
            await companies.create_company(session, OPERATOR, name=f"Company {n}", now=context.clock.now())
    await context.close()


def _seconds(command: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[1:])} failed: {done.stderr.decode()[-300:]}")
    return elapsed


def _medians(commands: dict[str, list[str]]) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(WARM_UP + ROUNDS):
        for name, command in commands.items():
            elapsed = _seconds(command)
            if round_ >= WARM_UP:
                times[name].append(elapsed)
    return {name: statistics.median(values) for name, values in times.items()}


def run() -> list[Result]:
    python = sys.executable
    compileall.compile_dir(ROOT / "chargenet", quiet=1)
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_store(folder))
        chargenet = [python, "-m", "chargenet"]
        median = _medians(
            {
                "list": [*chargenet, "admin", "company", "list", "--data-dir", folder],
                "help": [*chargenet, "admin", "company", "list", "--help"],
                "completion": [*chargenet, "completion", "bash"],
                "libraries": [python, "-c", LIBRARIES],
                "sqlalchemy": [python, "-c", "import sqlalchemy"],
                "python": [python, "-c", "pass"],
            }
        )
    ms = {name: round(seconds * 1000) for name, seconds in median.items()}
    print(
        f"cli: admin company list {ms['list']} ms, its libraries alone {ms['libraries']} ms, import sqlalchemy "
        f"{ms['sqlalchemy']} ms, python -c pass {ms['python']} ms; admin company list --help {ms['help']} ms, "
        f"completion bash {ms['completion']} ms (medians of {ROUNDS} rounds)"
    )

    def per_minute(name: str) -> float:
        return 60 / median[name]

    return [
        Result(
            "admin company list vs import sqlalchemy",
            per_minute("list"),
            per_minute("sqlalchemy"),
            "runs/min",
            target=SQLALCHEMY_ON_THE_MACHINE / TARGET_SECONDS,
        ),
        Result(
            "admin company list vs importing its libraries", per_minute("list"), per_minute("libraries"), "runs/min"
        ),
        Result("admin company list --help vs python -c pass", per_minute("help"), per_minute("python"), "runs/min"),
        Result("completion bash vs python -c pass", per_minute("completion"), per_minute("python"), "runs/min"),
    ]
