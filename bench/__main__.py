"""`make bench`: run every benchmark under bench/ and print ours-versus-baseline ratios from one run.

Each benchmark module exposes `run() -> list[Result]`; a result compares chargenet with a baseline measured
in the same process on the same machine, so the ratio means something on a shared, noisy machine.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from pathlib import Path

from bench.common import POSTGRES_SERVER, Result
from tests.support.postgres import PostgresUnavailable, ThrowawayPostgres


def main() -> int:
    # Every benchmark that measures the store runs on SQLite and on PostgreSQL: a throwaway server (the one the
    # test suite makes, tuned for tests: no fsync) unless CHARGENET_BENCH_POSTGRES names a server to use.
    if os.environ.get(POSTGRES_SERVER):
        return _main()
    server = ThrowawayPostgres()
    try:
        os.environ[POSTGRES_SERVER] = server.start()
    except PostgresUnavailable as exc:
        print(f"PostgreSQL figures skipped: {exc}", flush=True)
        return _main()
    try:
        return _main()
    finally:
        server.stop()


# Benchmarks that run for minutes on the wall clock: only when an argument names one whole (`python -m bench
# power_realtime`, `make bench-power`), never in the default set.
ON_REQUEST = frozenset({"bench_power_realtime"})


def _selected(name: str, args: list[str]) -> bool:
    if name in ON_REQUEST:
        return any(arg in (name, name.removeprefix("bench_")) for arg in args)
    return not args or any(arg in name for arg in args)


def _main() -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    selected = [n for n in names if _selected(n, sys.argv[1:])]
    results: list[Result] = []
    for name in selected:
        module = importlib.import_module(f"bench.{name}")
        print(f"== {name}", flush=True)
        for result in module.run():
            print(result.line(), flush=True)
            results.append(result)
    failed = [r for r in results if not r.meets_target]
    for result in failed:
        if result.failure:
            print(f"failed: {result.name}: {result.failure}")
        else:
            print(f"below target: {result.name} ratio {result.ratio:.2f} < {result.target:.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
