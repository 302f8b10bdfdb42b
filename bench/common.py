from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

POSTGRES_SERVER = "CHARGENET_BENCH_POSTGRES"
"""The environment variable naming the PostgreSQL server (a superuser URL) benchmarks make their databases on."""


@dataclass(frozen=True)
class Result:
    name: str
    ours: float
    baseline: float
    unit: str
    target: float | None = None  # minimum ours/baseline ratio an issue asks for
    failure: str = ""  # set when a correctness condition of the measurement did not hold (lost, unanswered, ...)

    @property
    def ratio(self) -> float:
        return self.ours / self.baseline if self.baseline else float("inf")

    @property
    def meets_target(self) -> bool:
        return not self.failure and (self.target is None or self.ratio >= self.target)

    def line(self) -> str:
        target = f" (target >= {self.target:.2f})" if self.target is not None else ""
        failure = f" FAILED: {self.failure}" if self.failure else ""
        return (
            f"{self.name}: ours {_figure(self.ours)} {self.unit}, baseline {_figure(self.baseline)} {self.unit}, "
            f"ratio {self.ratio:.2f}{target}{failure}"
        )


def _figure(value: float) -> str:
    """Whole numbers for rates; a small figure (a ratio) keeps its first digits."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def rate(count: int, action: Callable[[], object]) -> float:
    start = time.perf_counter()
    for _ in range(count):
        action()
    return count / (time.perf_counter() - start)


async def rate_async(count: int, action: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    for _ in range(count):
        await action()
    return count / (time.perf_counter() - start)


async def create_database(server_url: str) -> str:
    import secrets

    import asyncpg
    from sqlalchemy.engine import make_url

    name = f"chargenet_bench_{secrets.token_hex(4)}"
    plain = make_url(server_url).set(drivername="postgresql").render_as_string(hide_password=False)
    admin = await asyncpg.connect(plain)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


async def drop_database(server_url: str, database_url: str) -> None:
    import asyncpg
    from sqlalchemy.engine import make_url

    plain = make_url(server_url).set(drivername="postgresql").render_as_string(hide_password=False)
    admin = await asyncpg.connect(plain)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{make_url(database_url).database}" WITH (FORCE)')
    finally:
        await admin.close()
