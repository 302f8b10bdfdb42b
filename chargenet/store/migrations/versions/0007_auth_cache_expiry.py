"""auth cache keeps the upstream's expiry date apart from how long the edge trusts an answer

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 09:26:57.843288
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import chargenet.store.models.base

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing rows cannot tell the upstream's expiryDate from the edge's own day of trust, so they get none.
    with op.batch_alter_table("auth_cache", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("expires_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=True)
        )
    # ConcurrentTx is no longer cached; the rows that hold it were mostly the edge's own decision.
    op.execute(sa.text("DELETE FROM auth_cache WHERE status = 'ConcurrentTx'"))


def downgrade() -> None:
    with op.batch_alter_table("auth_cache", schema=None) as batch_op:
        batch_op.drop_column("expires_at")
