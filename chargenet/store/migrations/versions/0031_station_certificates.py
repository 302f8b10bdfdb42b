"""station certificates: the certificates the station CA signed for each station, and each site's choice of who
signs its stations' CSRs

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-29 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import chargenet.store.models.base

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "station_certificates",
        sa.Column("station_id", sa.String(length=48), nullable=False),
        sa.Column("serial", sa.String(length=40), nullable=False),
        sa.Column("subject", sa.String(length=300), nullable=False),
        sa.Column("fingerprint", sa.String(length=95), nullable=False),
        sa.Column("not_after", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("issued_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.Column("renewal_asked_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["station_id"],
            ["stations.id"],
            name=op.f("fk_station_certificates_station_id_stations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("station_id", "serial", name=op.f("pk_station_certificates")),
    )
    with op.batch_alter_table("station_certificates", schema=None) as batch_op:
        batch_op.create_index("ix_station_certificates_station", ["station_id", "not_after"], unique=False)
        batch_op.create_index(batch_op.f("ix_station_certificates_not_after"), ["not_after"], unique=False)
    with op.batch_alter_table("sites", schema=None) as batch_op:
        batch_op.add_column(sa.Column("station_csrs", sa.String(length=8), server_default="sign", nullable=False))


def downgrade() -> None:
    # In place (SQLite 3.35+), as 0028 does: stations refer to their site, so the table is not copied and renamed.
    with op.batch_alter_table("sites", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("station_csrs")
    with op.batch_alter_table("station_certificates", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_station_certificates_not_after"))
        batch_op.drop_index("ix_station_certificates_station")
    op.drop_table("station_certificates")
