from __future__ import annotations

from chargenet.domain.events import AuthorizationStatus
from chargenet.edge.core.authorize import AuthDecision, AuthSource
from chargenet.edge.core.starts import RepeatedStart
from chargenet.edge.ocpp16 import render


def test_the_edges_start_answer_carries_its_id_and_the_decision() -> None:
    decision = AuthDecision(AuthorizationStatus.INVALID, AuthSource.DEFAULT)
    assert render.start_answer(7, decision) == {"transactionId": 7, "idTagInfo": {"status": "Invalid"}}


def test_a_repeated_start_is_told_what_the_first_was_told() -> None:
    answer = render.repeated_start_answer(RepeatedStart(7, AuthorizationStatus.BLOCKED))
    assert answer == {"transactionId": 7, "idTagInfo": {"status": "Blocked"}}
