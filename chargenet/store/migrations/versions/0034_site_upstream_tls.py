"""site upstream tls: the security profile of a site's link to its upstream and its client certificate's summary;
why a station's link is down

Revision ID: 0034
Revises: 0033
Create Date: 2026-11-29 13:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from chargenet.store.models.base import UtcDateTime

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None

SITE_COLUMNS = (
    "upstream_security_profile",
    "upstream_client_subject",
    "upstream_client_not_after",
    "upstream_client_fingerprint",
    "upstream_ca_certificates",
)


# `sites` is not rebuilt in SQLite's batch mode, which would drop its directory triggers (0018).


def upgrade() -> None:
    op.add_column("sites", sa.Column("upstream_security_profile", sa.Integer(), nullable=True))
    op.add_column("sites", sa.Column("upstream_client_subject", sa.String(length=300), nullable=True))
    op.add_column("sites", sa.Column("upstream_client_not_after", UtcDateTime(timezone=True), nullable=True))
    op.add_column("sites", sa.Column("upstream_client_fingerprint", sa.String(length=100), nullable=True))
    op.add_column("sites", sa.Column("upstream_ca_certificates", sa.Integer(), nullable=True))
    op.add_column("station_presence", sa.Column("upstream_failure", sa.String(length=300), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE station_presence DROP COLUMN upstream_failure")
    for column in reversed(SITE_COLUMNS):
        op.execute(f"ALTER TABLE sites DROP COLUMN {column}")
