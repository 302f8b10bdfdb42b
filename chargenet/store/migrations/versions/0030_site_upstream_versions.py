"""site upstream versions: the OCPP generations a site's upstream takes (NULL: 1.6 only, as before)

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-29 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


# Neither step rebuilds `sites` in SQLite's batch mode, which would drop its directory triggers (0018).


def upgrade() -> None:
    op.add_column("sites", sa.Column("upstream_ocpp_versions", sa.String(length=40), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE sites DROP COLUMN upstream_ocpp_versions")
