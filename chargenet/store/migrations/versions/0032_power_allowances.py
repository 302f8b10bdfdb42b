"""power allowances: each session's allowance and the state the allocator resumes from, the stations' answers to
charging profiles, the upstreams' profiles kept for the merge, and who runs a site's rounds

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-29 12:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import chargenet.store.models.base

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

_TIME = chargenet.store.models.base.UtcDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "power_allowances",
        sa.Column("transaction_id", sa.Integer(), nullable=False),
        sa.Column("site_id", sa.String(length=64), nullable=False),
        sa.Column("station_id", sa.String(length=48), nullable=False),
        sa.Column("amps", sa.Float(), nullable=False),
        sa.Column("sent_amps", sa.Float(), nullable=True),
        sa.Column("sent_at", _TIME, nullable=True),
        sa.Column("paused_since", _TIME, nullable=True),
        sa.Column("charging_since", _TIME, nullable=True),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["transaction_id"],
            ["edge_transactions.id"],
            name=op.f("fk_power_allowances_transaction_id_edge_transactions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("transaction_id", name=op.f("pk_power_allowances")),
    )
    with op.batch_alter_table("power_allowances", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_power_allowances_site_id"), ["site_id"], unique=False)
    op.create_table(
        "station_profile_answers",
        sa.Column("station_id", sa.String(length=48), nullable=False),
        sa.Column("answer", sa.String(length=16), nullable=False),
        sa.Column("defaults_sent", sa.String(length=400), nullable=True),
        sa.Column("answered_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["station_id"],
            ["stations.id"],
            name=op.f("fk_station_profile_answers_station_id_stations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("station_id", name=op.f("pk_station_profile_answers")),
    )
    op.create_table(
        "upstream_charging_profiles",
        sa.Column("station_id", sa.String(length=48), nullable=False),
        sa.Column("connector_id", sa.Integer(), nullable=False),
        sa.Column("purpose", sa.String(length=32), nullable=False),
        sa.Column("request", sa.Text(), nullable=False),
        sa.Column("received_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["station_id"],
            ["stations.id"],
            name=op.f("fk_upstream_charging_profiles_station_id_stations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("station_id", "connector_id", "purpose", name=op.f("pk_upstream_charging_profiles")),
    )
    op.create_table(
        "power_leases",
        sa.Column("site_id", sa.String(length=64), nullable=False),
        sa.Column("owner", sa.String(length=64), nullable=True),
        sa.Column("expires_at", _TIME, nullable=True),
        sa.PrimaryKeyConstraint("site_id", name=op.f("pk_power_leases")),
    )


def downgrade() -> None:
    op.drop_table("power_leases")
    op.drop_table("upstream_charging_profiles")
    op.drop_table("station_profile_answers")
    with op.batch_alter_table("power_allowances", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_power_allowances_site_id"))
    op.drop_table("power_allowances")
