"""circuits: a site's tree of circuits with their limits, the grid meters on them, and each station's place in it

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-29 09:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import chargenet.store.models.base

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "grid_meters",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("site_id", sa.String(length=64), nullable=False),
        sa.Column("profile", sa.String(length=32), nullable=False),
        sa.Column("unit_id", sa.Integer(), nullable=False),
        sa.Column("transport", sa.String(length=8), nullable=False),
        sa.Column("tcp_host", sa.String(length=255), nullable=True),
        sa.Column("tcp_port", sa.Integer(), nullable=True),
        sa.Column("rtu_device", sa.String(length=255), nullable=True),
        sa.Column("baudrate", sa.Integer(), nullable=True),
        sa.Column("parity", sa.String(length=1), nullable=True),
        sa.Column("stopbits", sa.Integer(), nullable=True),
        sa.Column("poll_interval_s", sa.Float(), nullable=False),
        sa.Column("version", sa.Integer(), server_default="1", nullable=False),
        sa.Column("created_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["site_id"], ["sites.id"], name=op.f("fk_grid_meters_site_id_sites"), ondelete="RESTRICT"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_grid_meters")),
    )
    with op.batch_alter_table("grid_meters", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_grid_meters_site_id"), ["site_id"], unique=False)
    op.create_table(
        "circuits",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("site_id", sa.String(length=64), nullable=False),
        sa.Column("parent_id", sa.String(length=64), nullable=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("limit_a", sa.Float(), nullable=False),
        sa.Column("margin_a", sa.Float(), server_default="0", nullable=False),
        sa.Column("phases", sa.String(length=8), server_default="L1L2L3", nullable=False),
        sa.Column("meter_id", sa.String(length=64), nullable=True),
        sa.Column("version", sa.Integer(), server_default="1", nullable=False),
        sa.Column("created_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["meter_id"], ["grid_meters.id"], name=op.f("fk_circuits_meter_id_grid_meters"), ondelete="RESTRICT"
        ),
        sa.ForeignKeyConstraint(
            ["parent_id"], ["circuits.id"], name=op.f("fk_circuits_parent_id_circuits"), ondelete="RESTRICT"
        ),
        sa.ForeignKeyConstraint(["site_id"], ["sites.id"], name=op.f("fk_circuits_site_id_sites"), ondelete="RESTRICT"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_circuits")),
        sa.UniqueConstraint("meter_id", name=op.f("uq_circuits_meter_id")),
    )
    with op.batch_alter_table("circuits", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_circuits_parent_id"), ["parent_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_circuits_site_id"), ["site_id"], unique=False)
    op.create_table(
        "station_circuits",
        sa.Column("station_id", sa.String(length=48), nullable=False),
        sa.Column("circuit_id", sa.String(length=64), nullable=False),
        sa.Column("phases", sa.String(length=8), nullable=False),
        sa.Column("priority", sa.Integer(), server_default="0", nullable=False),
        sa.Column("updated_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["circuit_id"], ["circuits.id"], name=op.f("fk_station_circuits_circuit_id_circuits"), ondelete="RESTRICT"
        ),
        sa.ForeignKeyConstraint(
            ["station_id"], ["stations.id"], name=op.f("fk_station_circuits_station_id_stations"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("station_id", name=op.f("pk_station_circuits")),
    )
    with op.batch_alter_table("station_circuits", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_station_circuits_circuit_id"), ["circuit_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("station_circuits", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_station_circuits_circuit_id"))
    op.drop_table("station_circuits")
    with op.batch_alter_table("circuits", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_circuits_site_id"))
        batch_op.drop_index(batch_op.f("ix_circuits_parent_id"))
    op.drop_table("circuits")
    with op.batch_alter_table("grid_meters", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_grid_meters_site_id"))
    op.drop_table("grid_meters")
