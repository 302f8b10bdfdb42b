"""edge transactions record the upstream's refusal apart from its transaction id

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 10:05:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("edge_transactions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("upstream_refused", sa.Boolean(), nullable=False, server_default=sa.false()))
    # Until now an upstream id of 0 meant "refused"; those rows keep that meaning, without the id.
    op.execute(
        sa.text("UPDATE edge_transactions SET upstream_refused = true, upstream_id = NULL WHERE upstream_id = 0")
    )


def downgrade() -> None:
    op.execute(sa.text("UPDATE edge_transactions SET upstream_id = 0 WHERE upstream_refused AND upstream_id IS NULL"))
    with op.batch_alter_table("edge_transactions", schema=None) as batch_op:
        batch_op.drop_column("upstream_refused")
