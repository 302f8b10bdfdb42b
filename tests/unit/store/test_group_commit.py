"""The group commit's batching policy as plain code: when a batch is due, which units it takes, in which order."""

from __future__ import annotations

import pytest

from chargenet.store.group_commit import Batching


def batching(*, ordered: bool = False, max_batch: int | None = None) -> Batching[str, str, str]:
    return Batching(ordered=ordered, max_batch=max_batch)


def started(*units: tuple[str, int], ordered: bool = False, max_batch: int | None = None) -> Batching[str, str, str]:
    """A batch flushed and started with `units` (each with its key) waiting."""
    batch = batching(ordered=ordered, max_batch=max_batch)
    for unit, key in units:
        batch.add(unit, key)
    batch.flush()
    batch.start()
    return batch


def take_all(batch: Batching[str, str, str]) -> list[str]:
    taken = []
    while (unit := batch.next()) is not None:
        taken.append(unit)
    return taken


def test_waiting_units_are_not_due_until_a_flush_is_asked_for() -> None:
    batch = batching()
    batch.add("a")
    assert not batch.due()
    batch.flush()
    assert batch.due()


def test_a_flush_with_nothing_waiting_starts_no_batch() -> None:
    batch = batching()
    batch.flush()
    assert not batch.due()


def test_an_ordered_batch_takes_its_units_in_key_order_and_arrival_order_within_a_key() -> None:
    batch = started(("c1", 3), ("a1", 1), ("c2", 3), ("b1", 2), ("a2", 1), ordered=True)
    assert take_all(batch) == ["a1", "a2", "b1", "c1", "c2"]


def test_an_ordered_batch_is_fixed_at_its_start() -> None:
    batch = batching(ordered=True)
    batch.add("b", 2)
    batch.flush()
    batch.start()
    batch.add("a", 1)  # arrives while the batch runs
    assert take_all(batch) == ["b"]
    assert batch.pending() == (["a"], [])


def test_an_unordered_batch_takes_units_arriving_while_it_runs() -> None:
    batch = batching()
    batch.add("a")
    batch.flush()
    batch.start()
    assert batch.next() == "a"
    batch.add("b")
    assert take_all(batch) == ["b"]


def test_work_handed_over_during_a_batch_waits_for_the_next_flush() -> None:
    batch = batching(ordered=True)
    batch.add("a")
    batch.flush()
    batch.start()
    batch.add("b")
    take_all(batch)
    assert not batch.due()
    batch.flush()
    assert batch.due()


def test_a_flush_asked_for_during_a_batch_makes_the_next_one_due() -> None:
    batch = batching(ordered=True)
    batch.add("a")
    batch.flush()
    batch.start()
    batch.add("b")
    batch.flush()
    take_all(batch)
    assert batch.due()


@pytest.mark.parametrize(
    ("units", "ordered"),
    [
        pytest.param((("a", 0), ("b", 0), ("c", 0)), False, id="unordered-first-come"),
        pytest.param((("c", 3), ("a", 1), ("b", 2)), True, id="ordered-lowest-keys"),
    ],
)
def test_a_full_batch_takes_its_first_units_and_leaves_the_rest_due_at_once(
    units: tuple[tuple[str, int], ...], ordered: bool
) -> None:
    batch = started(*units, ordered=ordered, max_batch=2)
    assert take_all(batch) == ["a", "b"]
    assert batch.due()
    batch.start()
    assert take_all(batch) == ["c"]


def test_a_discarded_batch_puts_the_units_it_had_not_taken_first_in_the_next_one() -> None:
    batch = started(("a", 1), ("b", 2), ("c", 3), ordered=True)
    assert batch.next() == "a"
    batch.add("d", 0)  # arrived meanwhile, with a lower key
    batch.requeue()
    assert batch.due()
    batch.start()
    assert take_all(batch) == ["d", "b", "c"]


def test_units_of_one_key_put_back_by_a_discarded_batch_keep_their_order_ahead_of_later_ones() -> None:
    batch = started(("a", 1), ("b", 1), ("c", 1), ordered=True)
    assert batch.next() == "a"
    batch.add("d", 1)
    batch.requeue()
    batch.start()
    assert take_all(batch) == ["b", "c", "d"]


def test_a_failed_ordered_batch_fails_the_units_it_had_not_taken_yet() -> None:
    batch = started(("a", 1), ("b", 2), ("c", 3), ordered=True)
    assert batch.next() == "a"
    assert batch.abandon() == ["b", "c"]
    assert batch.empty()


def test_units_a_failed_unordered_batch_never_took_start_the_next_one_at_once() -> None:
    batch = batching()
    batch.add("a")
    batch.flush()
    batch.start()
    assert batch.abandon() == []  # failed before it took anything: its transaction could not begin
    assert batch.due()


def test_bulk_groups_are_taken_whole_after_the_units() -> None:
    batch = batching()
    batch.add_to_group("statuses", "s1")
    batch.add("a")
    batch.add_to_group("statuses", "s2")
    batch.flush()
    assert batch.due()
    batch.start()
    assert take_all(batch) == ["a"]
    assert batch.take_groups() == {"statuses": ["s1", "s2"]}
    assert batch.empty()


def test_a_bulk_item_alone_makes_a_batch_due_once_flushed() -> None:
    batch = batching()
    batch.add_to_group("statuses", "s1")
    batch.flush()
    assert batch.due()


def test_a_ride_takes_the_units_waiting_though_no_flush_was_asked_for() -> None:
    batch = batching(ordered=True)
    batch.add("b", 2)
    batch.add("a", 1)
    assert not batch.due()
    assert batch.ride()
    assert take_all(batch) == ["a", "b"]
    assert batch.empty()


def test_a_ride_with_nothing_waiting_starts_no_batch() -> None:
    batch = batching(ordered=True)
    assert not batch.ride()
    batch.add("a", 1)
    batch.flush()
    batch.start()
    take_all(batch)
    assert not batch.ride()


def test_units_handed_over_after_a_ride_wait_for_the_next_flush() -> None:
    batch = batching(ordered=True)
    batch.add("a", 1)
    batch.ride()
    batch.add("b", 1)
    assert take_all(batch) == ["a"]
    assert not batch.due()
