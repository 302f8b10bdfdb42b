"""grid meter readings: each grid meter's last answer, and the site power chart's samples

Revision ID: 0036
Revises: 0035
Create Date: 2026-11-29 13:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import chargenet.store.models.base

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None

_TIME = chargenet.store.models.base.UtcDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "grid_meter_readings",
        sa.Column("meter_id", sa.String(length=64), nullable=False),
        sa.Column("l1_a", sa.Float(), nullable=True),
        sa.Column("l2_a", sa.Float(), nullable=True),
        sa.Column("l3_a", sa.Float(), nullable=True),
        sa.Column("fault", sa.String(length=16), nullable=True),
        sa.Column("read_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["meter_id"],
            ["grid_meters.id"],
            name=op.f("fk_grid_meter_readings_meter_id_grid_meters"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("meter_id", name=op.f("pk_grid_meter_readings")),
    )
    op.create_table(
        "site_power_samples",
        sa.Column("circuit_id", sa.String(length=64), nullable=False),
        sa.Column("at", _TIME, nullable=False),
        sa.Column("site_id", sa.String(length=64), nullable=False),
        sa.Column("limit_a", sa.Float(), nullable=False),
        sa.Column("measured_a", sa.Float(), nullable=True),
        sa.Column("stations_a", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["circuit_id"],
            ["circuits.id"],
            name=op.f("fk_site_power_samples_circuit_id_circuits"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("circuit_id", "at", name=op.f("pk_site_power_samples")),
    )
    with op.batch_alter_table("site_power_samples", schema=None) as batch_op:
        batch_op.create_index("ix_site_power_samples_site_at", ["site_id", "at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("site_power_samples", schema=None) as batch_op:
        batch_op.drop_index("ix_site_power_samples_site_at")
    op.drop_table("site_power_samples")
    op.drop_table("grid_meter_readings")
