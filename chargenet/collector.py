"""The cyclic garbage collector as a serving process, and a command's, runs it.

Thresholds. With CPython's (700, 10, 10), a young collection runs every few hundred allocations and moves whatever
is alive at that moment (the frames, tasks and futures of every call in flight, thousands of them with thousands of
stations) to the oldest generation, so often that full collections, each walking every object of every connection,
kept coming under load: at 10,000 stations (1.8 million objects) the benchmark's edge spent 24 s in 17 of them on a
shared 2-core VM, stalling every station meanwhile. A youngest generation of 50,000 lets nearly all short-lived
objects be freed by reference counting before a collection sees them: no full collection in the same run. Reference
cycles are still collected, a little later.

The heap at start. What a process holds once it is set up (modules, classes, the application, SQLAlchemy's and
pydantic's compiled structures: about 190,000 objects) lives as long as the process, yet every full collection walked
it again: 90-100 ms with nothing else running, which at 500 webhook events a second showed as the worst
publish-to-receipt latency of a run. Frozen once set up, it is left out of every later collection; what the
process creates afterwards is collected as before. The price: an object alive at the freeze that later becomes part
of a reference cycle (a pooled connection replaced after a disconnect, say) is never collected, with what it holds.
That is bounded by the heap at start and does not grow with time; reference counting still frees the rest.

A command. A `chargenet` process starts with a youngest generation ten times the serving one's: a command imports a
few hundred modules (SQLAlchemy, pydantic, its mapped classes and views), about 200,000 objects that all live until it
ends, so a collection while they are imported finds nothing to free; with CPython's thresholds the collector walked
that growing heap again and again, and with the serving ones still twice (15-17 ms of a listing's 0.32 s). A long
command (`partner receive`) still collects, every 500,000 objects; `serve` and `demo` take the serving thresholds
before they start serving. As a command ends, everything still alive is frozen, so the interpreter's last collection
does not walk the heap that the exit frees anyway (docs/performance.md).
"""

from __future__ import annotations

import gc

GC_THRESHOLDS = (50_000, 20, 100)
COMMAND_GC_THRESHOLDS = (500_000, 20, 100)


def tune_for_serving() -> None:
    """Set the serving process's thresholds: at its start, before anything is allocated in bulk."""
    gc.set_threshold(*GC_THRESHOLDS)


def freeze_startup_heap() -> None:
    """Collect what setting up left behind, then leave everything still alive out of later collections: once the
    process is set up, before it serves."""
    gc.collect()
    gc.freeze()


def tune_for_command() -> None:
    """Set a `chargenet` process's thresholds, whichever command it runs: first thing, before any import in bulk."""
    gc.set_threshold(*COMMAND_GC_THRESHOLDS)


def freeze_at_exit() -> None:
    """Leave everything alive out of the collection the interpreter runs as it exits: only for a process that is
    about to end, since nothing alive now is collected again."""
    gc.freeze()
