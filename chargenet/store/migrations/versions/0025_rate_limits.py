"""rate limits: an application's own limit, and the token buckets processes on PostgreSQL share

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("applications", schema=None) as batch_op:
        batch_op.add_column(sa.Column("rate_limit", sa.Integer(), nullable=True))
    op.create_table(
        "rate_limit_buckets",
        sa.Column("client_id", sa.String(length=64), nullable=False),
        sa.Column("tokens", sa.Double(), nullable=False),
        sa.Column("at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["applications.client_id"],
            name=op.f("fk_rate_limit_buckets_client_id_applications"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("client_id", name=op.f("pk_rate_limit_buckets")),
    )


def downgrade() -> None:
    op.drop_table("rate_limit_buckets")
    with op.batch_alter_table("applications", schema=None) as batch_op:
        batch_op.drop_column("rate_limit")
