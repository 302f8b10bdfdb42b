"""OCPP 1.6 messages crossing between a station and its upstream: their transaction ids rewritten both ways, and
the offline queue replayed (the rules are `core.transactions` Rules 5-7; this is where they meet 1.6's fields).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from chargenet.edge.core.transactions import IdMap, UpstreamIdRefused
from chargenet.edge.ocpp16.frames import Payload


def upstream_transaction_id(action: str, payload: Payload) -> int | None:
    """The upstream transaction id a CALL from the upstream names, which the edge maps to its own (Rule 6)."""
    if action == "RemoteStopTransaction":
        value = payload.get("transactionId")
        return value if isinstance(value, int) else None
    if action == "SetChargingProfile":
        value = payload.get("csChargingProfiles", {}).get("transactionId")
        return value if isinstance(value, int) else None
    return None


def rewrite_for_upstream(action: str, payload: Payload, ids: IdMap) -> Payload:
    """The payload a station sent, with edge transaction ids replaced by the upstream's (Rule 5)."""
    if action in ("StopTransaction", "MeterValues") and "transactionId" in payload:
        return {**payload, "transactionId": ids.upstream_of(payload["transactionId"])}
    return payload


def rewrite_for_station(action: str, payload: Payload, ids: IdMap) -> Payload:
    """The payload an upstream sent, with its transaction ids replaced by the edge's (Rule 6)."""
    if action == "RemoteStopTransaction":
        return {**payload, "transactionId": ids.edge_of(payload["transactionId"])}
    if action == "SetChargingProfile" and "transactionId" in payload.get("csChargingProfiles", {}):
        rewritten: dict[str, Any] = copy.deepcopy(payload)
        profile = rewritten["csChargingProfiles"]
        profile["transactionId"] = ids.edge_of(profile["transactionId"])
        return rewritten
    return payload


# What the edge answers an upstream itself when Rule 6 keeps its call from the station; both calls that carry
# an upstream transaction id (RemoteStopTransaction, SetChargingProfile) have this answer.
REJECTED_BY_EDGE: Mapping[str, str] = {"status": "Rejected"}


def for_station_start(edge_id: int, upstream_answer: Payload) -> Payload:
    """The StartTransaction answer a station gets when the upstream answered: its idTagInfo, our id."""
    return {**upstream_answer, "transactionId": edge_id}


# The offline queue --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueuedMessage:
    """A station message waiting for the upstream, as the station sent it (edge ids)."""

    sequence: int
    action: str
    payload: Payload
    transaction_id: int | None  # the edge transaction it belongs to; None for MeterValues outside one


@dataclass(frozen=True, slots=True)
class ReplayPolicy:
    rate: float = 10.0  # messages per second, per station (SAP simulator#1204: unthrottled replay is a DDoS)

    @property
    def interval(self) -> timedelta:
        return timedelta(seconds=1 / self.rate)


class ReplayStep(StrEnum):
    SEND = "send"
    WAIT_THROTTLE = "wait_throttle"
    DROP = "drop"


@dataclass(frozen=True, slots=True)
class Replay:
    step: ReplayStep
    payload: Payload | None = None  # with upstream ids, for SEND
    not_before: datetime | None = None  # for WAIT_THROTTLE
    reason: str = ""  # for DROP


def next_replay(
    head: QueuedMessage, ids: IdMap, last_sent: datetime | None, now: datetime, policy: ReplayPolicy
) -> Replay:
    """What to do with the head of the queue now (Rule 7)."""
    if last_sent is not None and now < last_sent + policy.interval:
        return Replay(ReplayStep.WAIT_THROTTLE, not_before=last_sent + policy.interval)
    try:
        payload = rewrite_for_upstream(head.action, head.payload, ids)
    except UpstreamIdRefused as exc:
        return Replay(ReplayStep.DROP, reason=exc.message)
    # UpstreamIdPending cannot happen here: the start is earlier in the same ordered queue, and its answer
    # (or refusal) is mapped before the head moves on. If it does, it is our bug and propagates.
    return Replay(ReplayStep.SEND, payload=payload)
