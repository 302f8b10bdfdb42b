"""session requests: the remote starts asked for over the API, their answers and the transactions that followed

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-29 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import chargenet.store.models.base

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

_AT = chargenet.store.models.base.UtcDateTime


def upgrade() -> None:
    op.create_table(
        "session_requests",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("site_id", sa.String(length=64), nullable=False),
        sa.Column("station_id", sa.String(length=48), nullable=False),
        sa.Column("charge_point_id", sa.String(length=64), nullable=False),
        sa.Column("connector_id", sa.Integer(), nullable=False),
        sa.Column("ocpp_connector_id", sa.Integer(), nullable=False),
        sa.Column("id_tag", sa.String(length=36), nullable=False),
        sa.Column("requested_by", sa.String(length=300), nullable=False),
        sa.Column("requested_at", _AT(timezone=True), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("answered_at", _AT(timezone=True), nullable=True),
        sa.Column("transaction_id", sa.Integer(), nullable=True),
        sa.Column("remote_start_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["station_id"], ["stations.id"], name=op.f("fk_session_requests_station_id_stations"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_session_requests")),
    )
    with op.batch_alter_table("session_requests", schema=None) as batch_op:
        batch_op.create_index(
            "ix_session_requests_match", ["station_id", "ocpp_connector_id", "requested_at"], unique=False
        )
        batch_op.create_index("ix_session_requests_requested_at", ["requested_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("session_requests", schema=None) as batch_op:
        batch_op.drop_index("ix_session_requests_requested_at")
        batch_op.drop_index("ix_session_requests_match")
    op.drop_table("session_requests")
