"""The core's answers in OCPP 1.6's words: what a station is sent back."""

from __future__ import annotations

from chargenet.edge.core.authorize import AuthDecision
from chargenet.edge.core.starts import RepeatedStart
from chargenet.edge.ocpp16.frames import Payload


def id_tag_info(decision: AuthDecision) -> Payload:
    """The IdTagInfo for a decision: the expiry a station gets is one an upstream or the local list gave."""
    info: Payload = {"status": decision.status.value}
    if decision.expires_at is not None:
        info["expiryDate"] = decision.expires_at.isoformat().replace("+00:00", "Z")
    if decision.parent_id_tag is not None:
        info["parentIdTag"] = decision.parent_id_tag
    return info


def start_answer(transaction_id: int, decision: AuthDecision) -> Payload:
    """The edge's own StartTransaction answer (when the upstream answered, `relaying.for_station_start`)."""
    return {"transactionId": transaction_id, "idTagInfo": id_tag_info(decision)}


def repeated_start_answer(repeat: RepeatedStart) -> Payload:
    """A resent StartTransaction gets what the first one got (decisions.md §4)."""
    return {"transactionId": repeat.transaction_id, "idTagInfo": {"status": repeat.auth_status.value}}
