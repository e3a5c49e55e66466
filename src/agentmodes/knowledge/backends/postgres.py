"""A knowledge base in PostgreSQL + pgvector: documents, chunks and vectors in tables.

    kb = KnowledgeBase.open("postgresql://user@/db?host=/run/postgresql&kb=handbook")

Same storage contract as the SQLite file (backends/__init__.py), so ingest, chunking and the
embedding cache behave identically: one transaction per document, vectors keyed by
(embedder, text hash), a `revision` bumped by every write. Every write transaction first
locks the KB's revision row: writers to one KB (two workers ingesting) queue there instead
of racing, readers never wait. Connections come from a small pool, so the searches of many
concurrent chats in one worker do not queue on one connection.

Vectors travel as pgvector values through its psycopg adapter (binary), as float32.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from ...errors import KnowledgeBaseError
from ...store.urls import connection_problem, parse_postgres
from ..chunking import Chunk
from .postgres_schema import open_kb, quoted
from .rows import ChunkRow, DocumentRow

if TYPE_CHECKING:
    from ..embedders import Embedder

POOL_SIZE = int(os.environ.get("AGENTMODES_KB_POOL_SIZE") or 4)


class PostgresBackend:
    """One knowledge base (one schema) in one PostgreSQL database."""

    path: Path | None = None

    def __init__(self, location: str, *, create: bool = True, busy_timeout: float = 5.0) -> None:
        try:
            import psycopg_pool
            from pgvector.psycopg import register_vector
        except ImportError:
            raise KnowledgeBaseError("PostgreSQL knowledge bases need psycopg, psycopg-pool "
                                     "and pgvector: pip install 'agentmodes[postgres]'") from None
        url = parse_postgres(str(location))
        self.url = url
        self.location = url.display
        first, self.schema = open_kb(url, create=create)
        first.close()
        search_path = f"SET search_path TO {quoted(self.schema)}, public"
        timeout_ms = int(busy_timeout * 1000)

        def configure(conn: Any) -> None:
            register_vector(conn)
            conn.execute(search_path)
            # A writer waits this long for another writer's lock (as SQLite's busy timeout).
            conn.execute(f"SET lock_timeout = {timeout_ms}")

        self._pool = psycopg_pool.ConnectionPool(
            url.conninfo, min_size=1, max_size=POOL_SIZE, configure=configure, open=True,
            kwargs={"autocommit": True}, name=f"agentmodes-{self.schema}")
        self._closed = threading.Event()

    # --- connections and transactions ---------------------------------------------------

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        import psycopg
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.errors.LockNotAvailable:
            raise KnowledgeBaseError(f"knowledge base {self.location} is locked by another "
                                     "writer (an ingest still running?); try again when it "
                                     "has finished") from None
        except psycopg.OperationalError as err:
            raise KnowledgeBaseError(connection_problem(err, self.location)) from None

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A write transaction holding the KB's write lock (its revision row)."""
        with self._conn() as conn, conn.transaction():
            conn.execute("SELECT value FROM meta WHERE key = 'revision' FOR UPDATE")
            yield conn

    def _query(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        with self._conn() as conn:
            return conn.execute(sql, params).fetchall()

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self._pool.close()

    # --- meta ---------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = %s", (key,))
        return rows[0][0] if rows else None

    @staticmethod
    def _set_meta(conn: Any, key: str, value: str) -> None:
        conn.execute("INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO "
                     "UPDATE SET value = excluded.value", (key, value))

    @staticmethod
    def _bump_revision(conn: Any) -> None:
        conn.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'revision'")

    def revision(self) -> int:
        return int(self.get_meta("revision") or 0)

    def set_embedder(self, name: str | None, dim: int | None) -> None:
        with self.transaction() as conn:
            if name is None:
                conn.execute("DELETE FROM meta WHERE key IN ('embedder', 'embedder_dim')")
            else:
                self._set_meta(conn, "embedder", name)
                self._set_meta(conn, "embedder_dim", str(dim or 0))
            self._bump_revision(conn)

    def set_chunking(self, size: int, overlap: int) -> None:
        if self.get_meta("chunk_size") == str(size) and \
                self.get_meta("chunk_overlap") == str(overlap):
            return
        with self.transaction() as conn:
            self._set_meta(conn, "chunk_size", str(size))
            self._set_meta(conn, "chunk_overlap", str(overlap))

    # --- documents ----------------------------------------------------------------------

    def own_files(self) -> set[str]:
        return set()                  # nothing of ours on the local disk

    _DOCUMENT = "SELECT id, path, root, title, content_hash, mtime, size FROM documents"

    def document(self, path: str) -> DocumentRow | None:
        rows = self._query(f"{self._DOCUMENT} WHERE path = %s", (path,))
        return DocumentRow(*rows[0]) if rows else None

    def documents_under(self, folder: str) -> list[DocumentRow]:
        prefix = folder.rstrip("/\\") + "/"
        rows = self._query(f"{self._DOCUMENT} WHERE path LIKE %s ORDER BY path",
                           (_like_prefix(prefix),))
        return [DocumentRow(*row) for row in rows]

    def replace_document(self, path: str, root: str, title: str, content_hash: str,
                         mtime: float, size: int, chunks: list[Chunk], force: bool = False) -> str:
        with self.transaction() as conn:
            row = conn.execute("SELECT id, content_hash FROM documents WHERE path = %s",
                               (path,)).fetchone()
            if row and row[1] == content_hash and not force:
                conn.execute("UPDATE documents SET mtime = %s, size = %s WHERE id = %s",
                             (mtime, size, row[0]))
                return "unchanged"
            if row:
                conn.execute("DELETE FROM documents WHERE id = %s", (row[0],))
            doc_id = conn.execute(
                "INSERT INTO documents (path, root, title, content_hash, mtime, size) "
                "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                (path, root, title, content_hash, mtime, size)).fetchone()[0]
            with conn.cursor() as cur, cur.copy(
                    "COPY chunks (doc_id, position, title, heading_path, text, text_hash) "
                    "FROM STDIN") as copy:
                for c in chunks:
                    copy.write_row((doc_id, c.position, c.title,
                                    json.dumps(c.heading_path, ensure_ascii=False), c.text,
                                    c.text_hash))
            self._bump_revision(conn)
            return "updated" if row else "added"

    def remove_document(self, path: str) -> bool:
        with self.transaction() as conn:
            deleted = conn.execute("DELETE FROM documents WHERE path = %s", (path,)).rowcount
            if deleted:
                self._bump_revision(conn)
            return bool(deleted)

    def list_documents(self, doc_id: int | None = None) -> list[tuple[DocumentRow, int, str]]:
        where = "WHERE d.id = %s" if doc_id is not None else ""
        rows = self._query(
            "SELECT d.id, d.path, d.root, d.title, d.content_hash, d.mtime, d.size, "
            "(SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.id), "
            "to_char(d.ingested_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') "
            f"FROM documents d {where} ORDER BY d.path",
            (doc_id,) if doc_id is not None else ())
        return [(DocumentRow(*row[:7]), int(row[7]), row[8]) for row in rows]

    def chunks_of(self, doc_id: int, offset: int = 0, limit: int = -1) -> list[ChunkRow]:
        rows = self._query(
            f"{_CHUNK} WHERE c.doc_id = %s ORDER BY c.position OFFSET %s LIMIT %s",
            (doc_id, max(offset, 0), None if limit < 0 else limit))
        return [_chunk_row(row) for row in rows]

    # --- chunks -------------------------------------------------------------------------

    def chunk_keys(self) -> dict[int, str]:
        return dict(self._query("SELECT id, text_hash FROM chunks"))

    def chunks_by_id(self, ids: list[int]) -> dict[int, ChunkRow]:
        if not ids:
            return {}
        rows = self._query(f"{_CHUNK} WHERE c.id = ANY(%s)", (list(map(int, ids)),))
        return {row[0]: _chunk_row(row) for row in rows}

    # --- embeddings ---------------------------------------------------------------------

    def pending_texts(self, embedder: str) -> list[tuple[str, int]]:
        return [tuple(r) for r in self._query(
            "SELECT c.text_hash, MIN(c.id) FROM chunks c LEFT JOIN embeddings e "
            "ON e.embedder = %s AND e.text_hash = c.text_hash WHERE e.text_hash IS NULL "
            "GROUP BY c.text_hash ORDER BY MIN(c.id)", (embedder,))]

    def count_pending(self, embedder: str | None) -> int:
        if embedder is None:
            return self._query("SELECT COUNT(*) FROM chunks")[0][0]
        return self._query(
            "SELECT COUNT(*) FROM chunks c LEFT JOIN embeddings e ON e.embedder = %s AND "
            "e.text_hash = c.text_hash WHERE e.text_hash IS NULL", (embedder,))[0][0]

    def put_vectors(self, embedder: str, hashes: list[str], vectors: np.ndarray) -> None:
        rows = [(embedder, h, np.ascontiguousarray(v, dtype=np.float32))
                for h, v in zip(hashes, vectors)]
        with self.transaction() as conn:
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO embeddings (embedder, text_hash, vector) VALUES (%s, %s, %s) "
                    "ON CONFLICT (embedder, text_hash) DO UPDATE SET vector = excluded.vector",
                    rows)
            self._bump_revision(conn)

    def vector_keys(self, embedder: str) -> dict[int, str]:
        return dict(self._query(
            "SELECT c.id, c.text_hash FROM chunks c JOIN embeddings e ON e.embedder = %s AND "
            "e.text_hash = c.text_hash", (embedder,)))

    def chunk_vectors(self, embedder: str, ids: list[int]) -> tuple[list[int], np.ndarray]:
        if not ids:
            return [], np.zeros((0, 0), dtype=np.float32)
        with self._conn() as conn, conn.cursor(binary=True) as cur:
            cur.execute("SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON "
                        "e.embedder = %s AND e.text_hash = c.text_hash WHERE c.id = ANY(%s) "
                        "ORDER BY c.id", (embedder, list(map(int, ids))))
            rows = cur.fetchall()
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [r[0] for r in rows], np.stack([_array(r[1]) for r in rows])

    def prune_vectors(self) -> int:
        with self.transaction() as conn:
            return conn.execute("DELETE FROM embeddings e WHERE NOT EXISTS (SELECT 1 FROM "
                                "chunks c WHERE c.text_hash = e.text_hash)").rowcount

    def drop_vectors_except(self, embedder: str | None) -> None:
        with self.transaction() as conn:
            conn.execute("DELETE FROM embeddings WHERE embedder IS DISTINCT FROM %s", (embedder,))
            self._bump_revision(conn)

    # --- statistics and integrity -------------------------------------------------------

    def counts(self) -> dict[str, int]:
        row = self._query("SELECT (SELECT COUNT(*) FROM documents), (SELECT COUNT(*) FROM "
                          "chunks), (SELECT COUNT(*) FROM embeddings)")[0]
        return {"documents": row[0], "chunks": row[1], "vectors": row[2]}

    def size_bytes(self) -> int:
        row = self._query("SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM "
                          "pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                          "WHERE n.nspname = %s AND c.relkind IN ('r', 'm')", (self.schema,))
        return int(row[0][0])

    def integrity_problems(self) -> list[str]:
        problems = []
        empty = self._query("SELECT COUNT(*) FROM documents d WHERE NOT EXISTS "
                            "(SELECT 1 FROM chunks c WHERE c.doc_id = d.id)")[0][0]
        if empty:
            problems.append(f"{empty} documents without chunks")
        return problems

    # --- search -------------------------------------------------------------------------

    def search_index(self, load_embedder: Callable[[], "Embedder"], language: str) -> Any:
        from ..live_index import LiveIndex
        return LiveIndex(self, load_embedder, language)


_CHUNK = ("SELECT c.id, c.doc_id, c.position, c.title, c.heading_path, c.text, c.text_hash, "
          "d.path FROM chunks c JOIN documents d ON d.id = c.doc_id")


def _chunk_row(row: tuple) -> ChunkRow:
    heading = row[4] if isinstance(row[4], list) else json.loads(row[4])
    return ChunkRow(row[0], row[1], row[2], row[3], heading, row[5], row[6], row[7])


def _array(value: Any) -> np.ndarray:
    """A pgvector value (numpy from the text loader, Vector from the binary one) as float32."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value,
                      dtype=np.float32)


def _like_prefix(prefix: str) -> str:
    """A LIKE pattern matching exactly the strings that start with `prefix`."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
