"""meter samples and meter health: a session's energy over time, and each meter's poll counters for the console

Sessions stopped before this revision have no samples (their start and stop readings are all there was).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 15:06:53.738606
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from chargenet.store.models.base import UtcDateTime

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "meter_samples",
        sa.Column("transaction_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("station_id", sa.String(length=48), nullable=False),
        sa.Column("at", UtcDateTime(timezone=True), nullable=False),
        sa.Column("energy_wh", sa.BigInteger(), nullable=False),
        sa.Column("power_w", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("transaction_id", "station_id", "at", name=op.f("pk_meter_samples")),
    )
    op.create_index("ix_meter_samples_at", "meter_samples", ["at"], unique=False)
    op.create_table(
        "meter_health",
        sa.Column("meter_id", sa.String(length=64), nullable=False),
        sa.Column("bus_key", sa.String(length=300), nullable=False),
        sa.Column("owner", sa.String(length=64), nullable=False),
        sa.Column("reads", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.BigInteger(), nullable=False),
        sa.Column("timeouts", sa.BigInteger(), nullable=False),
        sa.Column("crc_errors", sa.BigInteger(), nullable=False),
        sa.Column("last_answer_at", UtcDateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.String(length=32), nullable=True),
        sa.Column("dead", sa.Boolean(), nullable=False),
        sa.Column("updated_at", UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["meter_id"], ["meters.id"], name=op.f("fk_meter_health_meter_id_meters"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("meter_id", name=op.f("pk_meter_health")),
    )
    op.create_index(op.f("ix_meter_health_bus_key"), "meter_health", ["bus_key"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_meter_health_bus_key"), table_name="meter_health")
    op.drop_table("meter_health")
    op.drop_index("ix_meter_samples_at", table_name="meter_samples")
    op.drop_table("meter_samples")
