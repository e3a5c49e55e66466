"""Every table of the application database on one MetaData: what the migrations must build.

Importing this module registers all table modules; Alembic's env.py and the migration test
use it, so a table module that is not listed here is a test failure, not a silent gap.
"""

from . import chat, memory, users  # noqa: F401  (their Table objects register on `metadata`)
from .engine import metadata

__all__ = ["metadata"]
