"""The SQLite KB's embedding bookkeeping, at a cost that follows the change, not the KB.

Which chunks still need a vector used to be one LEFT JOIN of every chunk against the
embeddings (3.5 s at 100k chunks on a busy machine, for an ingest that added one document,
and twice: the list, then the count). Chunk ids only grow (AUTOINCREMENT), and embedding goes
in chunk order, so a watermark answers it: meta `embedded_through:<embedder>` is an id below
which every chunk has a vector from that embedder, and only chunks above it are looked at.

It stays a true lower bound because nothing takes the vector of a chunk at or below it away:
vectors are pruned only where no chunk carries their text any more (`prune_hashes`), and a
re-index with another embedder uses another key. Kept conservative under concurrency: it is
only ever moved up, to a point a consistent read inside the writing transaction proved.

Pruning: a deleted or replaced document's vectors go in the same transaction, by the text
hashes of its chunks (index look-ups), instead of a sweep of every vector after the ingest.
"""

from __future__ import annotations

import sqlite3

_PENDING = ("FROM chunks c LEFT JOIN embeddings e ON e.embedder = ? AND e.text_hash = "
            "c.text_hash WHERE c.id > ? AND e.text_hash IS NULL")


def _key(embedder: str) -> str:
    return f"embedded_through:{embedder}"


def watermark(conn: sqlite3.Connection, embedder: str) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key=?", (_key(embedder),)).fetchone()
    return int(row[0]) if row else 0


def pending_texts(conn: sqlite3.Connection, embedder: str) -> list[tuple[str, int]]:
    return conn.execute(f"SELECT c.text_hash, MIN(c.id) {_PENDING} GROUP BY c.text_hash "
                        "ORDER BY MIN(c.id)", (embedder, watermark(conn, embedder))).fetchall()


def count_pending(conn: sqlite3.Connection, embedder: str) -> int:
    return conn.execute(f"SELECT COUNT(*) {_PENDING}",
                        (embedder, watermark(conn, embedder))).fetchone()[0]


def advance(conn: sqlite3.Connection, embedder: str) -> None:
    """Move the watermark up to just below the first chunk without a vector (inside the
    caller's write transaction; scans only from the old watermark to that chunk)."""
    mark = watermark(conn, embedder)
    first = conn.execute(f"SELECT MIN(c.id) {_PENDING}", (embedder, mark)).fetchone()[0]
    if first is None:
        first = (conn.execute("SELECT MAX(id) FROM chunks").fetchone()[0] or 0) + 1
    if first - 1 > mark:
        conn.execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE "
                     "SET value=excluded.value", (_key(embedder), str(first - 1)))


def forget_other_watermarks(conn: sqlite3.Connection, embedder: str | None) -> None:
    conn.execute("DELETE FROM meta WHERE key LIKE 'embedded_through:%' AND key IS NOT ?",
                 (None if embedder is None else _key(embedder),))


def hashes_of_document(conn: sqlite3.Connection, doc_id: int) -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT text_hash FROM chunks WHERE doc_id=?",
                                       (doc_id,))]


def prune_hashes(conn: sqlite3.Connection, hashes: list[str]) -> int:
    """Delete the vectors of these texts where no chunk carries them any more."""
    if not hashes:
        return 0
    orphans = [h for h in hashes if conn.execute(
        "SELECT 1 FROM chunks WHERE text_hash=? LIMIT 1", (h,)).fetchone() is None]
    deleted = 0
    for embedder in _embedders(conn):
        deleted += conn.executemany("DELETE FROM embeddings WHERE embedder=? AND text_hash=?",
                                    [(embedder, h) for h in orphans]).rowcount
    return deleted


def _embedders(conn: sqlite3.Connection) -> list[str]:
    """The distinct embedders with vectors, by seeking the primary key (not a scan)."""
    found: list[str] = []
    while True:
        row = conn.execute("SELECT MIN(embedder) FROM embeddings WHERE embedder > ?",
                           (found[-1] if found else "",)).fetchone()
        if row[0] is None:
            return found
        found.append(row[0])
