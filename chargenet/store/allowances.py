"""A site's open transactions as the power allocator sees them: each with the allowance it holds, read the same way
by the controller that runs the site's rounds (`edge/power.py`) and by the power view (`services/site_power.py`)."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain import power
from chargenet.store.models import EdgeTransaction, PowerAllowance

DEFAULT_MAX_CURRENT_A = 32.0
"""What a session is taken to ask for per phase while neither its vehicle nor its station has said."""
UNLIMITED_ANSWERS = frozenset({"Rejected", "NotSupported"})
"""A station that answered a charging profile so cannot be limited: counted at its sessions' full rating."""


async def open_transactions(
    session: AsyncSession, site_id: str, on_circuits: Collection[str]
) -> list[tuple[EdgeTransaction, PowerAllowance | None]]:
    """The site's transactions still open on the stations hung on a circuit, oldest first, with their allowances."""
    rows = await session.execute(
        select(EdgeTransaction, PowerAllowance)
        .outerjoin(PowerAllowance, PowerAllowance.transaction_id == EdgeTransaction.id)
        .where(EdgeTransaction.site_id == site_id, EdgeTransaction.stopped_at.is_(None))
        .order_by(EdgeTransaction.id)
    )
    return [(transaction, allowance) for transaction, allowance in rows if transaction.station_id in on_circuits]


def allocator_session(
    transaction: EdgeTransaction, allowance: PowerAllowance | None, draw_a: float | None = None
) -> power.Session:
    """The transaction as the allocator's session, resuming from the allowance it holds (none: a new one), with what
    its vehicle draws as far as is known (`meters.grid.session_draws`)."""
    return power.Session(
        str(transaction.id),
        transaction.station_id,
        transaction.ocpp_connector_id,
        transaction.started_at,
        max_current_a=DEFAULT_MAX_CURRENT_A,
        draw_a=draw_a,
        allowance_a=allowance.amps if allowance else None,
        sent_at=allowance.sent_at if allowance else None,
        paused_since=allowance.paused_since if allowance else None,
        charging_since=allowance.charging_since if allowance else None,
    )
