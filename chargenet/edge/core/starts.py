"""A transaction start planned in pure code, from what one unit of work read, so the same unit can write it.

The store hands over `StartFacts` (the start stored under the same key, the tag's local list entry and cached
upstream answer, the open transactions of the tag at the site and of the start's connector); `plan_start` says
what the start is: a repeat (answered as before, nothing written), a new start (its authorization decision and
the open transactions it closes), or a start that needs the plugins' opinions first, which the shell asks
outside any unit and hands back to `plan_start` in the unit that writes.

Concurrency (authorize Rule 5) is judged as after the closes: a transaction this start closes (transactions
Rule 4a) does not make its tag ConcurrentTx.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from chargenet.domain.events import AuthorizationStatus
from chargenet.edge.core import authorize as auth
from chargenet.edge.core.transactions import StartKey, Superseded, TransactionRecord, supersede


@dataclass(frozen=True, slots=True)
class RepeatedStart:
    """A start the edge already has: answered again with what the first one got (transactions Rule 2)."""

    transaction_id: int
    auth_status: AuthorizationStatus


@dataclass(frozen=True, slots=True)
class StartFacts:
    repeat: RepeatedStart | None
    local_entry: auth.LocalAuthEntry | None
    cached: auth.CachedAuthorization | None
    open_of_token: Sequence[TransactionRecord]  # the tag's open transactions at the station's site
    open_on_connector: Sequence[TransactionRecord]  # the station's open transactions on the start's connector


@dataclass(frozen=True, slots=True)
class NewStart:
    decision: auth.AuthDecision
    closes: Sequence[Superseded]  # the open transactions of the connector this start ends (Rule 4a)


@dataclass(frozen=True, slots=True)
class AskPlugins:
    """The tag is for the plugins to judge; their opinions go back to `plan_start`."""


def plan_start(
    key: StartKey,
    facts: StartFacts,
    *,
    now: datetime,
    plugin_count: int,
    has_upstream: bool,
    opinions: Sequence[AuthorizationStatus | None] | None = None,
) -> RepeatedStart | NewStart | AskPlugins:
    """What a start is. A start never asks the upstream about its tag: when it is forwarded, the start itself is
    the upstream's question, and its answer decides again (`authorize.after_upstream`)."""
    if facts.repeat is not None:
        return facts.repeat
    closes = [ending for record in facts.open_on_connector if (ending := supersede(record, key)) is not None]
    closed = {ending.transaction_id for ending in closes}
    context = auth.AuthorizeContext(
        id_tag=key.id_tag,
        now=now,
        local_entry=facts.local_entry,
        plugin_count=plugin_count,
        upstream=auth.UpstreamState.AWAY if has_upstream else auth.UpstreamState.NONE,
        cached=facts.cached,
        has_active_transaction=any(record.transaction_id not in closed for record in facts.open_of_token),
    )
    step = auth.begin(context)
    if step is auth.NextSource.PLUGINS:
        if opinions is None:
            return AskPlugins()
        step = auth.after_plugins(context, list(opinions))
    # With the upstream never connected here, the chain ends in a decision.
    assert isinstance(step, auth.AuthDecision)
    return NewStart(step, closes)
