"""What a unit of work leaves to be done once its transaction is decided: the one way to say "after commit, do X".

`after_commit(session, callback)` runs `callback()` once the transaction of `session` has committed, and never
if it rolls back: the outbox's signal to this process's readers (`outbox/signal.py`), the dead-letter counter
(`webhooks/queue.py`), this process's webhook lanes woken after a webhook changed (`webhooks/changes.py`).
`before_commit(session, callback)` runs `callback(session)` just before that commit, inside the transaction, where
it may still execute statements: the `pg_notify` that tells other processes (`store/notify.py`).

Savepoints. The edge's group committer runs each unit of a batch in a savepoint of its own, and rolls back the
savepoint of a unit that fails (`store/group_commit.py`). What is registered inside a savepoint belongs to it:
when the savepoint is released it passes to the transaction (or savepoint) around it, when it is rolled back it
is dropped with the savepoint's writes. So a callback runs if and only if the writes made beside it were
committed, and only at the commit of the outermost transaction, never at a savepoint's release (whose writes
other connections cannot see yet). A savepoint is released or rolled back before its transaction commits (as
`begin_nested()` does used as a context manager).

Keys. A callback registered with a `key` runs once a transaction, however many times it is registered with that
key (a wake-up that every unit of a batch asks for): a registration is skipped while one with the same key is
pending in the transaction or a savepoint around the current one; one dropped with a rolled-back savepoint no
longer counts. Without a key, every registration runs (a dead letter counted for each one stored).

Callbacks run in the order they were first registered. One run after the commit that raises is logged and the
others still run: the transaction has committed, which is what its caller must learn. One run before the commit
that raises fails the commit, like any statement of the transaction.

Only the sessions that register anything are listened to, from their first registration on: nothing here
watches every session of the process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session, SessionTransaction

log = logging.getLogger(__name__)

_HOOKS = "chargenet.commit_hooks"

Before = Callable[[Session], None]
After = Callable[[], None]
C = TypeVar("C", Before, After)


@dataclass(slots=True)
class _Pending:
    """What one transaction or savepoint registered, by key."""

    before: dict[Hashable, Before] = field(default_factory=dict)
    after: dict[Hashable, After] = field(default_factory=dict)


@dataclass(slots=True)
class _Hooks:
    """A session's registrations, by the transaction or savepoint they belong to, and the savepoints released."""

    pending: dict[SessionTransaction, _Pending] = field(default_factory=dict)
    committed: set[SessionTransaction] = field(default_factory=set)


def after_commit(session: AsyncSession | Session, callback: After, *, key: Hashable | None = None) -> None:
    """Run `callback()` once the transaction of `session` has committed; never if it, or the savepoint it was
    registered in, rolls back. With `key`, once a transaction however often it is registered."""
    _register(session, callback, key, lambda pending: pending.after)


def before_commit(session: AsyncSession | Session, callback: Before, *, key: Hashable | None = None) -> None:
    """Run `callback(session)` inside the transaction of `session`, just before it commits; never if it, or the
    savepoint it was registered in, rolls back. With `key`, once a transaction however often it is registered."""
    _register(session, callback, key, lambda pending: pending.before)


def _register(
    session: AsyncSession | Session,
    callback: C,
    key: Hashable | None,
    kind: Callable[[_Pending], dict[Hashable, C]],
) -> None:
    sync = session.sync_session if isinstance(session, AsyncSession) else session
    current = sync.get_nested_transaction() or sync.get_transaction()
    if current is None:
        raise RuntimeError("a commit hook belongs to a transaction, and the session has none")
    hooks: _Hooks | None = sync.info.get(_HOOKS)
    if hooks is None:
        hooks = sync.info[_HOOKS] = _Hooks()
        event.listen(sync, "before_commit", _before_commit)
        event.listen(sync, "after_commit", _after_commit)
        event.listen(sync, "after_transaction_end", _after_transaction_end)
    if key is None:
        key = object()  # a key of its own: it always runs
    elif any(key in kind(hooks.pending[t]) for t in _enclosing(current) if t in hooks.pending):
        return
    kind(hooks.pending.setdefault(current, _Pending()))[key] = callback


def _enclosing(transaction: SessionTransaction | None) -> list[SessionTransaction]:
    """`transaction` and the savepoints and transaction around it, innermost first."""
    chain = []
    while transaction is not None:
        chain.append(transaction)
        transaction = transaction.parent
    return chain


def _holder(transaction: SessionTransaction) -> SessionTransaction:
    """The savepoint or transaction that what `transaction` registered passes to when it is released (past the
    session's own subtransactions, which are neither)."""
    parent = transaction.parent
    assert parent is not None
    while parent.parent is not None and not parent.nested:
        parent = parent.parent
    return parent


def _before_commit(session: Session) -> None:
    if session.in_nested_transaction():
        return  # a savepoint released: what it registered waits for the transaction's own commit
    hooks: _Hooks = session.info[_HOOKS]
    root = session.get_transaction()
    pending = hooks.pending.get(root) if root is not None else None
    if pending is not None:
        for callback in list(pending.before.values()):
            callback(session)


def _after_commit(session: Session) -> None:
    committed = session.get_nested_transaction() or session.get_transaction()
    if committed is not None:
        hooks: _Hooks = session.info[_HOOKS]
        hooks.committed.add(committed)


def _after_transaction_end(session: Session, transaction: SessionTransaction) -> None:
    hooks: _Hooks = session.info[_HOOKS]
    if transaction.parent is None:
        # The transaction's end: its callbacks run if it committed, and are forgotten either way.
        pending = hooks.pending.pop(transaction, None)
        committed = transaction in hooks.committed
        hooks.pending.clear()
        hooks.committed.clear()
        if committed and pending is not None:
            _run(list(pending.after.values()))
        return
    if not transaction.nested:
        return  # one of the session's own subtransactions (a flush's): nothing is registered in those
    pending = hooks.pending.pop(transaction, None)
    released = transaction in hooks.committed
    hooks.committed.discard(transaction)
    if pending is None or not released:
        return  # rolled back: dropped with the savepoint's writes
    holder = hooks.pending.setdefault(_holder(transaction), _Pending())
    for key, before in pending.before.items():
        holder.before.setdefault(key, before)
    for key, after in pending.after.items():
        holder.after.setdefault(key, after)


def _run(callbacks: list[After]) -> None:
    for callback in callbacks:
        try:
            callback()
        except Exception:
            log.exception("a callback run after a commit failed")
