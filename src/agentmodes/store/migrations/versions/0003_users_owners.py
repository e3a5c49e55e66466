"""Users and ownership: API users with hashed keys, the owner of each conversation, and
the process writing a running answer (so a restart can fail the answers of a dead one).

Conversations from before this revision have no owner: only admins see them.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_users",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sqlite_autoincrement=True)
    op.add_column("conversations", sa.Column("owner", sa.String(100), nullable=True))
    op.create_index("conversations_owner", "conversations", ["owner", "updated_at"])
    op.add_column("chatbot_messages", sa.Column("worker", sa.String(300), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chatbot_messages") as batch:
        batch.drop_column("worker")
    op.drop_index("conversations_owner", table_name="conversations")
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("owner")
    op.drop_table("api_users")
