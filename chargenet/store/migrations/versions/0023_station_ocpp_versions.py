"""station OCPP versions: the generations a station may use, the one in use, 2.0.1 transactions and station
notices

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-29 09:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import chargenet.store.models.base

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("stations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ocpp_versions", sa.String(length=40), nullable=True))
    with op.batch_alter_table("station_presence", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ocpp_version", sa.String(length=16), nullable=True))
        batch_op.alter_column("vendor", existing_type=sa.String(length=20), type_=sa.String(length=50))
    with op.batch_alter_table("edge_transactions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("station_transaction_id", sa.String(length=36), nullable=True))
        batch_op.add_column(sa.Column("seq_no", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("meter_last", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("id_token_type", sa.String(length=20), nullable=True))
        batch_op.alter_column("id_tag", existing_type=sa.String(length=20), type_=sa.String(length=36))
        batch_op.create_index("ix_edge_tx_station_transaction", ["station_id", "station_transaction_id"], unique=True)
    op.create_table(
        "station_notices",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("station_id", sa.String(length=48), nullable=False),
        sa.Column("action", sa.String(length=40), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("received_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["station_id"], ["stations.id"], name=op.f("fk_station_notices_station_id_stations"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_station_notices")),
    )
    with op.batch_alter_table("station_notices", schema=None) as batch_op:
        batch_op.create_index("ix_station_notices_station", ["station_id", "action", "received_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("station_notices", schema=None) as batch_op:
        batch_op.drop_index("ix_station_notices_station")
    op.drop_table("station_notices")
    with op.batch_alter_table("edge_transactions", schema=None) as batch_op:
        batch_op.drop_index("ix_edge_tx_station_transaction")
        # id_tag and vendor stay wide: a 2.0.1 station's values may be stored in them, and 0022's code writes
        # and reads them the same.
        batch_op.drop_column("id_token_type")
        batch_op.drop_column("meter_last")
        batch_op.drop_column("seq_no")
        batch_op.drop_column("station_transaction_id")
    with op.batch_alter_table("station_presence", schema=None) as batch_op:
        batch_op.drop_column("ocpp_version")
    with op.batch_alter_table("stations", schema=None) as batch_op:
        batch_op.drop_column("ocpp_versions")
