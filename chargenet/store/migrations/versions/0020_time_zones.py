"""time zones: each company's (an IANA name, Europe/Brussels by default) and each operator's own, optional

The console shows times, date filters and days in the operator's zone, else the company's. Existing companies
get Europe/Brussels, the zone the specification writes partners' events in; existing operators none of their own.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-29 06:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("companies", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("time_zone", sa.String(length=64), nullable=False, server_default="Europe/Brussels")
        )
    with op.batch_alter_table("operators", schema=None) as batch_op:
        batch_op.add_column(sa.Column("time_zone", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("operators", schema=None) as batch_op:
        batch_op.drop_column("time_zone")
    with op.batch_alter_table("companies", schema=None) as batch_op:
        batch_op.drop_column("time_zone")
