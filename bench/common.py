from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


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
            f"{self.name}: ours {self.ours:,.0f} {self.unit}, baseline {self.baseline:,.0f} {self.unit}, "
            f"ratio {self.ratio:.2f}{target}{failure}"
        )


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
