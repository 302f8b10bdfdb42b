"""live status indexes: what changed since an instant, in connectors and station presence

The console's live feed asks both tables, twice a second, for rows stamped after its last look; without these it
read every row each time.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25 16:15:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_connectors_updated_at", "connectors", ["updated_at"], unique=False)
    op.create_index("ix_station_presence_connected_at", "station_presence", ["connected_at"], unique=False)
    op.create_index("ix_station_presence_disconnected_at", "station_presence", ["disconnected_at"], unique=False)
    op.create_index("ix_station_presence_last_heartbeat_at", "station_presence", ["last_heartbeat_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_station_presence_last_heartbeat_at", table_name="station_presence")
    op.drop_index("ix_station_presence_disconnected_at", table_name="station_presence")
    op.drop_index("ix_station_presence_connected_at", table_name="station_presence")
    op.drop_index("ix_connectors_updated_at", table_name="connectors")
