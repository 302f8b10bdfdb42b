"""The event outbox: the one way the OCPP edge and the Modbus meters raise events.

`Outbox.publish` writes the envelope in the caller's database transaction, next to the state change that
caused it, so an event exists if and only if its cause was committed. Consumers (the webhook lane filler,
the events feed) read each (site, event type) stream in commit order through `OutboxConsumer`.
"""

from chargenet.outbox.consumer import OutboxConsumer, PendingStream, StoredEvent
from chargenet.outbox.publisher import Outbox
from chargenet.outbox.signal import outbox_committed

__all__ = ["Outbox", "OutboxConsumer", "PendingStream", "StoredEvent", "outbox_committed"]
