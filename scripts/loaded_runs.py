"""Check the suite for flakes the way the project requires (docs/testing.md): `make test` in a fresh clone, several
times in a row, each beside a CPU hog of two busy processes.

    python3 scripts/loaded_runs.py                      # this repository's HEAD, three runs
    python3 scripts/loaded_runs.py --rev my-branch --runs 1
    python3 scripts/loaded_runs.py --repo /path/to/repo --rev 1a2b3c4 --keep

Each run clones the repository afresh into a folder of its own (so nothing of a previous run, no .venv, no cache,
no leftover database, is reused), checks out the revision, and runs `make test` there while the hog runs; the runs
follow one another, never two at once (two suites at once would collide on ports and databases, and measure that
instead). The hog's processes are this script's own children and are ended when it ends, however it ends. Each
run's output goes to `run-N.log` in the work folder; the clones are removed after their run unless `--keep`.
Prints each run's result and duration and the failed tests it names; exits 0 only if every run passed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
HOG = "while True: pass"
FAILED_LINE = re.compile(r"^(FAILED|ERROR) \S+", re.MULTILINE)
SUMMARY_LINE = re.compile(r"^=*\s*(\d+ (?:passed|failed|errors?)\b.* in [\d.]+s\b.*?)\s*=*$", re.MULTILINE)


@dataclass
class Run:
    number: int
    returncode: int
    seconds: float
    log: Path
    summary: str
    failed: list[str]

    @property
    def passed(self) -> bool:
        return self.returncode == 0


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout.strip()  # noqa: S603, S607


def start_hog(processes: int) -> list[subprocess.Popen[bytes]]:
    """`processes` busy loops, each keeping a core busy for as long as it runs."""
    return [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(processes)]  # noqa: S603


def stop_hog(hog: list[subprocess.Popen[bytes]]) -> None:
    for process in hog:
        process.kill()
    for process in hog:
        process.wait()


def _run(command: list[str], out: IO[str], cwd: Path | None = None) -> int:
    """`command`'s exit status; if this script is stopped meanwhile, the command and what it started are too."""
    process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=out, start_new_session=True)  # noqa: S603
    try:
        return process.wait()
    except BaseException:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()
        raise


def one_run(number: int, repo: str, commit: str, work: Path, *, keep: bool) -> Run:
    clone = work / f"run-{number}"
    log = work / f"run-{number}.log"
    started = time.monotonic()
    with log.open("w") as out:
        out.write(f"$ git clone {repo} {clone} && git checkout {commit} && make test\n")
        out.flush()
        returncode = _run(["git", "clone", "--quiet", repo, str(clone)], out)
        if returncode == 0:
            returncode = _run(["git", "-C", str(clone), "checkout", "--quiet", commit], out)
        if returncode == 0:
            returncode = _run(["make", "test"], out, cwd=clone)
    seconds = time.monotonic() - started
    text = log.read_text(errors="replace")
    summaries = SUMMARY_LINE.findall(text)
    summary = summaries[-1] if summaries else f"make test exited {returncode} before pytest's summary"
    failed = sorted({match.group(0) for match in FAILED_LINE.finditer(text)})
    if not keep:
        shutil.rmtree(clone, ignore_errors=True)
    return Run(number, returncode, seconds, log, summary, failed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", default=str(ROOT), help="the repository to clone (default: this one)")
    parser.add_argument("--rev", default="HEAD", help="the revision to test, as the repository names it")
    parser.add_argument("--runs", type=int, default=3, help="runs in a row (default 3)")
    parser.add_argument("--hog", type=int, default=2, help="busy processes beside each run (default 2)")
    parser.add_argument("--work", type=Path, help="where the clones and logs go (default: a new temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep each clone after its run")
    args = parser.parse_args(argv)
    # Stopped by a signal, it still ends the hog and the run in progress (the `finally` below, and `_run`).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    commit = _git("-C", args.repo, "rev-parse", "--verify", f"{args.rev}^{{commit}}")
    work = args.work or Path(tempfile.mkdtemp(prefix="loaded-runs-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"loaded runs: {args.runs} x `make test` of {args.repo} at {commit[:12]}, {args.hog} busy processes beside")
    print(f"loaded runs: logs in {work}", flush=True)
    runs: list[Run] = []
    hog = start_hog(args.hog)
    try:
        for number in range(1, args.runs + 1):
            run = one_run(number, args.repo, commit, work, keep=args.keep)
            runs.append(run)
            result = "passed" if run.passed else "FAILED"
            print(f"run {number}: {result} in {run.seconds / 60:.1f} min ({run.summary}); log {run.log}", flush=True)
            for line in run.failed:
                print(f"    {line}", flush=True)
    finally:
        stop_hog(hog)
    passed = sum(run.passed for run in runs)
    print(f"loaded runs: {passed} of {len(runs)} passed at {commit[:12]}")
    return 0 if runs and passed == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
