"""local list id tokens: a site's local list entries take 2.0.1's idTokens, up to 36 characters with a type

Revision ID: 0033
Revises: 0032
Create Date: 2026-11-29 12:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("local_auth_entries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("id_token_type", sa.String(length=20), server_default="ISO14443", nullable=False))
        batch_op.alter_column("id_tag", existing_type=sa.String(length=20), type_=sa.String(length=36))
        batch_op.alter_column("parent_id_tag", existing_type=sa.String(length=20), type_=sa.String(length=36))


def downgrade() -> None:
    # id_tag and parent_id_tag stay wide: entries of 2.0.1 stations may be stored in them, and 0032's code writes
    # and reads them the same.
    with op.batch_alter_table("local_auth_entries", schema=None) as batch_op:
        batch_op.drop_column("id_token_type")
