"""Alembic revisions of the application database (see store/migrate.py)."""
