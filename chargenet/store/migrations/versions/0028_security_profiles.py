"""security profiles: each station's profile (0-3), its serial number, its latest refused handshake, and the
company's organisation name (a profile 3 certificate's CN and O)

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-29 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import chargenet.store.models.base

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("stations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("security_profile", sa.Integer(), server_default="1", nullable=False))
        batch_op.add_column(sa.Column("last_refusal", sa.String(length=64), nullable=True))
        batch_op.add_column(
            sa.Column("last_refusal_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(sa.Column("serial_number", sa.String(length=64), nullable=True))
    with op.batch_alter_table("companies", schema=None) as batch_op:
        batch_op.add_column(sa.Column("organisation_name", sa.String(length=64), nullable=True))
    # A station without an AuthorizationKey was profile 0 all along, and stays so.
    op.execute("UPDATE stations SET security_profile = 0 WHERE password_hash IS NULL")


def downgrade() -> None:
    # Not the copy-and-rename SQLite's batch mode would do: sites refer to their company and charge points to their
    # station, so dropping either table breaks their foreign keys. SQLite drops a plain column in place since 3.35.
    with op.batch_alter_table("companies", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("organisation_name")
    with op.batch_alter_table("stations", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("serial_number")
        batch_op.drop_column("last_refusal_at")
        batch_op.drop_column("last_refusal")
        batch_op.drop_column("security_profile")
