"""webhook care: custom request headers, station and charge point filters, and the previous credentials kept
during a rotation's overlap

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-29 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import chargenet.store.models.base

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("webhooks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("custom_headers", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("station_filter", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("charge_point_filter", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("previous_credentials", sa.LargeBinary(), nullable=True))
        batch_op.add_column(
            sa.Column(
                "previous_credentials_until", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=True
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("webhooks", schema=None) as batch_op:
        batch_op.drop_column("previous_credentials_until")
        batch_op.drop_column("previous_credentials")
        batch_op.drop_column("charge_point_filter")
        batch_op.drop_column("station_filter")
        batch_op.drop_column("custom_headers")
