"""station logs: one-time upload slots for the logs asked of stations, and the log files received

Revision ID: 0035
Revises: 0034
Create Date: 2026-11-29 13:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import chargenet.store.models.base

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "log_upload_slots",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("station_id", sa.String(length=48), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("requested_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("max_bytes", sa.BigInteger(), nullable=False),
        sa.Column("used_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["station_id"], ["stations.id"], name=op.f("fk_log_upload_slots_station_id_stations"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_log_upload_slots")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_log_upload_slots_token_hash")),
    )
    with op.batch_alter_table("log_upload_slots", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_log_upload_slots_station_id"), ["station_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_log_upload_slots_requested_at"), ["requested_at"], unique=False)
    op.create_table(
        "station_logs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("station_id", sa.String(length=48), nullable=False),
        sa.Column("request_id", sa.Integer(), nullable=False),
        sa.Column("file_name", sa.String(length=120), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("received_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("path", sa.String(length=300), nullable=False),
        sa.ForeignKeyConstraint(
            ["station_id"], ["stations.id"], name=op.f("fk_station_logs_station_id_stations"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["log_upload_slots.id"],
            name=op.f("fk_station_logs_request_id_log_upload_slots"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_station_logs")),
        sa.UniqueConstraint("request_id", name=op.f("uq_station_logs_request_id")),
    )
    with op.batch_alter_table("station_logs", schema=None) as batch_op:
        batch_op.create_index("ix_station_logs_station", ["station_id", "received_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_station_logs_received_at"), ["received_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("station_logs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_station_logs_received_at"))
        batch_op.drop_index("ix_station_logs_station")
    op.drop_table("station_logs")
    with op.batch_alter_table("log_upload_slots", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_log_upload_slots_requested_at"))
        batch_op.drop_index(batch_op.f("ix_log_upload_slots_station_id"))
    op.drop_table("log_upload_slots")
