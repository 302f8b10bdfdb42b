"""ocpp message heads: type, message id and action of every logged frame, searchable per station

Frames logged before this revision keep NULL there (no backfill: the log is kept 30 days, and the action of an
answer comes from its CALL, which only the logger knew); a time filter still finds them.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 12:54:48.698463
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ocpp_messages", schema=None) as batch_op:
        batch_op.add_column(sa.Column("message_type", sa.SmallInteger(), nullable=True))
        batch_op.add_column(sa.Column("message_id", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("action", sa.String(length=64), nullable=True))
        batch_op.create_index("ix_ocpp_messages_station_action", ["station_id", "action", "id"], unique=False)
        batch_op.create_index("ix_ocpp_messages_station_message", ["station_id", "message_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("ocpp_messages", schema=None) as batch_op:
        batch_op.drop_index("ix_ocpp_messages_station_message")
        batch_op.drop_index("ix_ocpp_messages_station_action")
        batch_op.drop_column("action")
        batch_op.drop_column("message_id")
        batch_op.drop_column("message_type")
