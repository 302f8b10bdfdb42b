"""local authorization list entry versions, so an edit made from an older version of an entry is refused

Existing entries start at version 1, as every edited object did in 0011.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("local_auth_entries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("version", sa.Integer(), nullable=False, server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("local_auth_entries", schema=None) as batch_op:
        batch_op.drop_column("version")
