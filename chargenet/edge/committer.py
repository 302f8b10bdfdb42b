"""Group commit for the edge: units of work from many stations share one transaction, so one commit (one fsync)
serves a whole batch, and each station is answered only after its own work is durable.

The edge's use of the store's group commit (`chargenet.store.group_commit`): a unit is the body of an
`async with committer.unit() as session:` block, run in the station's task, each in its own savepoint
(`Failure.UNIT`), so one that fails (a duplicate start losing a unique constraint, a bad connector id) is rolled
back alone while the rest of the batch commits; BootNotification's and StatusNotification's writes go through
`bulk`, and the statuses a 2.0.1 TransactionEvent derives are handed over with its unit to the same status writer
(`submit_bulk_with_unit`). Batches are
unordered, so under load a batch grows to what arrives while it runs, up to MAX_BATCH units. On SQLite it is the
store's carrier: the webhook engine's acknowledgements ride its batches (`GroupCommit`'s `carries`), so a busy
station's batch and a busy lane's acknowledgements take one turn of the writer and one sync to disk.
"""

from __future__ import annotations

from chargenet.store.db import Store
from chargenet.store.group_commit import BulkHandler, Failure, GroupCommit

__all__ = ["MAX_BATCH", "BulkHandler", "GroupCommitter"]

MAX_BATCH = 256


class GroupCommitter(GroupCommit):
    def __init__(self, store: Store, max_batch: int = MAX_BATCH) -> None:
        super().__init__(store, name="edge", failure=Failure.UNIT, max_batch=max_batch, carries=True)
