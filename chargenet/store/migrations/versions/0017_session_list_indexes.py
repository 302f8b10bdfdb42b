"""session list indexes: the OCPP transactions in progress, and by their start

The sessions list shows the newest first: those in progress are a handful among a long history, and a filter by
period bounds the start; without these both read the transactions from the newest back until the page filled.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 16:50:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_edge_tx_in_progress",
        "edge_transactions",
        ["id"],
        unique=False,
        sqlite_where=sa.text("stopped_at IS NULL"),
        postgresql_where=sa.text("stopped_at IS NULL"),
    )
    op.create_index("ix_edge_tx_started_at", "edge_transactions", ["started_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_edge_tx_started_at", table_name="edge_transactions")
    op.drop_index("ix_edge_tx_in_progress", table_name="edge_transactions")
