"""station upstream link state: whether a connected station's link to its site's upstream is up

Only the process holding a station knows whether its upstream link is up; stored with the station's presence,
every process's console can count the links that are down.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 16:25:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("station_presence") as batch:
        batch.add_column(sa.Column("upstream_connected", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("station_presence") as batch:
        batch.drop_column("upstream_connected")
