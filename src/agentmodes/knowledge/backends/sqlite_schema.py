"""The SQLite knowledge base's schema, its change log, and the upgrade from older files.

Schema 2 (this version) adds what persisted indexes need to follow the file incrementally:
- chunk ids from AUTOINCREMENT, so they only ever grow: "chunks added since the index was
  saved" is `id > last indexed id`, and a saved index's rows have ascending ids.
- a change log filled by triggers inside the writing transaction, so it can never disagree
  with the tables: `removed_chunks` (every deleted chunk, also through ON DELETE CASCADE) and
  `vector_log` (every stored vector). A saved index records the last sequence numbers it
  contains; opening it replays only what came after.
- `kb_id` in meta: a random id that a saved index must match (a file restored from a backup
  or replaced by another KB never pairs with the wrong index).

Schema 1 files (agentmodes before persisted indexes) are upgraded in place on open, in one
transaction: the chunks table is rebuilt with AUTOINCREMENT ids (same ids, same rows), the
log tables and triggers are added. Nothing is re-extracted or re-embedded.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator

SCHEMA_VERSION = 2

_CHUNKS = """CREATE TABLE {name} (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    title TEXT NOT NULL,
    heading_path TEXT NOT NULL,
    text TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    UNIQUE (doc_id, position)
)"""

TABLES = [
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE documents (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    root TEXT NOT NULL,
    title TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    mtime REAL NOT NULL,
    size INTEGER NOT NULL,
    ingested_at TEXT NOT NULL DEFAULT (datetime('now'))
)""",
    "CREATE INDEX documents_root ON documents(root)",
    _CHUNKS.format(name="chunks"),
    "CREATE INDEX chunks_text_hash ON chunks(text_hash)",
    """CREATE TABLE embeddings (
    embedder TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (embedder, text_hash)
) WITHOUT ROWID""",
]

CHANGE_LOG = [
    "CREATE TABLE removed_chunks (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "chunk_id INTEGER NOT NULL)",
    "CREATE TABLE vector_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, embedder TEXT NOT NULL, "
    "text_hash TEXT NOT NULL)",
    "CREATE TRIGGER chunks_removed AFTER DELETE ON chunks BEGIN "
    "INSERT INTO removed_chunks(chunk_id) VALUES (old.id); END",
    "CREATE TRIGGER vectors_stored AFTER INSERT ON embeddings BEGIN "
    "INSERT INTO vector_log(embedder, text_hash) VALUES (new.embedder, new.text_hash); END",
]


def create(conn: sqlite3.Connection) -> None:
    """A new, empty schema (inside the caller's transaction)."""
    for statement in TABLES + CHANGE_LOG:
        conn.execute(statement)
    conn.execute("INSERT INTO meta(key, value) VALUES ('kb_id', ?)", (uuid.uuid4().hex,))


def upgrade_from_1(conn: sqlite3.Connection) -> None:
    """Schema 1 -> 2 in place (inside the caller's transaction)."""
    conn.execute(_CHUNKS.format(name="chunks_v2"))
    conn.execute("INSERT INTO chunks_v2 SELECT id, doc_id, position, title, heading_path, "
                 "text, text_hash FROM chunks")
    conn.execute("DROP TABLE chunks")
    conn.execute("ALTER TABLE chunks_v2 RENAME TO chunks")
    conn.execute("CREATE INDEX chunks_text_hash ON chunks(text_hash)")
    for statement in CHANGE_LOG:
        conn.execute(statement)
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('kb_id', ?)",
                 (uuid.uuid4().hex,))


def batches(ids: list, size: int = 900) -> Iterator[list]:
    """Slices small enough for SQLite's limit on bound parameters."""
    for start in range(0, len(ids), size):
        yield ids[start:start + size]
