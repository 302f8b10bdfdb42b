"""The garbage collector as a serving process, and a command's, runs it."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from chargenet.collector import (
    COMMAND_GC_THRESHOLDS,
    GC_THRESHOLDS,
    freeze_at_exit,
    freeze_startup_heap,
    tune_for_command,
    tune_for_serving,
)


class _Held:
    """An object the process keeps."""


@pytest.fixture
def collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def _tracked(obj: object) -> bool:
    return any(o is obj for o in gc.get_objects())


@pytest.mark.usefixtures("collector")
def test_serving_thresholds_leave_short_lived_objects_to_reference_counting() -> None:
    tune_for_serving()
    assert gc.get_threshold() == GC_THRESHOLDS
    assert GC_THRESHOLDS[0] >= 50_000


@pytest.mark.usefixtures("collector")
def test_what_is_alive_when_the_heap_is_frozen_is_left_out_of_later_collections() -> None:
    held = _Held()
    freeze_startup_heap()
    later = _Held()
    assert not _tracked(held)
    assert _tracked(later)


@pytest.mark.usefixtures("collector")
def test_garbage_cycles_left_by_setting_up_are_collected_not_frozen() -> None:
    cycle = _Held()
    cycle.itself = cycle  # type: ignore[attr-defined]
    gone = weakref.ref(cycle)
    gc.disable()  # only the freeze's own collection may free it
    try:
        del cycle
        assert gone() is not None
        freeze_startup_heap()
        assert gone() is None
    finally:
        gc.enable()


@pytest.mark.usefixtures("collector")
def test_a_command_imports_its_modules_without_a_young_collection_yet_still_collects() -> None:
    tune_for_command()
    assert gc.get_threshold() == COMMAND_GC_THRESHOLDS
    assert COMMAND_GC_THRESHOLDS[0] >= 250_000  # a command's imports leave about 200,000 objects, all of them alive
    assert gc.isenabled()


@pytest.mark.usefixtures("collector")
def test_what_is_alive_at_exit_is_left_out_of_the_last_collection() -> None:
    held = _Held()
    freeze_at_exit()
    assert not _tracked(held)
