"""unstarted station transactions: what a 2.0.1 transaction's events said before one could start it, and the
start key unique among 1.6 transactions only

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-29 10:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import chargenet.store.models.base

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

_START_KEY = ["station_id", "ocpp_connector_id", "id_tag", "started_at", "meter_start"]


def upgrade() -> None:
    op.create_table(
        "edge_unstarted_transactions",
        sa.Column("station_id", sa.String(length=48), nullable=False),
        sa.Column("station_transaction_id", sa.String(length=36), nullable=False),
        sa.Column("began_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("charge_point_id", sa.String(length=64), nullable=True),
        sa.Column("connector_id", sa.Integer(), nullable=True),
        sa.Column("ocpp_connector_id", sa.Integer(), nullable=True),
        sa.Column("id_tag", sa.String(length=36), nullable=True),
        sa.Column("id_token_type", sa.String(length=20), nullable=True),
        sa.Column("meter_begin", sa.BigInteger(), nullable=True),
        sa.Column("meter_first", sa.BigInteger(), nullable=True),
        sa.Column("updated_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["station_id"],
            ["stations.id"],
            name=op.f("fk_edge_unstarted_transactions_station_id_stations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("station_id", "station_transaction_id", name=op.f("pk_edge_unstarted_transactions")),
    )
    with op.batch_alter_table("edge_unstarted_transactions", schema=None) as batch_op:
        batch_op.create_index("ix_edge_unstarted_station", ["station_id", "updated_at"], unique=False)
    # Two 2.0.1 transactions (or a 2.0.1 and a 1.6 one) may begin alike: the station's name tells them apart.
    with op.batch_alter_table("edge_transactions", schema=None) as batch_op:
        batch_op.drop_constraint("uq_edge_tx_start", type_="unique")
        batch_op.create_index(
            "uq_edge_tx_start",
            _START_KEY,
            unique=True,
            sqlite_where=sa.text("station_transaction_id IS NULL"),
            postgresql_where=sa.text("station_transaction_id IS NULL"),
        )


def downgrade() -> None:
    # Refused (the constraint cannot be made) while two transactions that began alike are stored: the older schema
    # cannot hold them, and no transaction is dropped to make it fit.
    with op.batch_alter_table("edge_transactions", schema=None) as batch_op:
        batch_op.drop_index("uq_edge_tx_start")
        batch_op.create_unique_constraint("uq_edge_tx_start", _START_KEY)
    with op.batch_alter_table("edge_unstarted_transactions", schema=None) as batch_op:
        batch_op.drop_index("ix_edge_unstarted_station")
    op.drop_table("edge_unstarted_transactions")
