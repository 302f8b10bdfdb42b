"""token revocation and client keys: revoked access tokens (RFC 7009), the public keys of private_key_jwt
(RFC 7523) per application, and the client assertions already used

Revision ID: 0022
Revises: 0019
Create Date: 2026-11-29 06:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import chargenet.store.models.base

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("applications", schema=None) as batch_op:
        batch_op.add_column(sa.Column("jwks", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("jwks_url", sa.String(length=2000), nullable=True))
    op.create_table(
        "revoked_tokens",
        sa.Column("jti", sa.String(length=64), nullable=False),
        sa.Column("client_id", sa.String(length=64), nullable=False),
        sa.Column("expires_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("jti", name=op.f("pk_revoked_tokens")),
    )
    with op.batch_alter_table("revoked_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_revoked_tokens_expires_at"), ["expires_at"], unique=False)
    op.create_table(
        "used_assertions",
        sa.Column("client_id", sa.String(length=64), nullable=False),
        sa.Column("jti", sa.String(length=200), nullable=False),
        sa.Column("expires_at", chargenet.store.models.base.UtcDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("client_id", "jti", name=op.f("pk_used_assertions")),
    )
    with op.batch_alter_table("used_assertions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_used_assertions_expires_at"), ["expires_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("used_assertions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_used_assertions_expires_at"))
    op.drop_table("used_assertions")
    with op.batch_alter_table("revoked_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_revoked_tokens_expires_at"))
    op.drop_table("revoked_tokens")
    with op.batch_alter_table("applications", schema=None) as batch_op:
        batch_op.drop_column("jwks_url")
        batch_op.drop_column("jwks")
