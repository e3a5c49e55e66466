"""A knowledge base in PostgreSQL + pgvector: documents, chunks and vectors in tables.

    kb = KnowledgeBase.open("postgresql://user@/db?host=/run/postgresql&kb=handbook")

Same storage contract as the SQLite file (backends/__init__.py), so ingest, chunking and the
embedding cache behave identically: one transaction per document, vectors keyed by
(embedder, text hash), a `revision` bumped by every write. Every write transaction first
locks the KB's revision row: writers to one KB (two workers ingesting) queue there instead
of racing, readers never wait. Connections come from a small pool, so the searches of many
concurrent chats in one worker do not queue on one connection.

Vectors travel as pgvector values through its psycopg adapter (binary), as float32.

Search happens inside the database (postgres_search.py): a document's analysed terms and
postings are written in the document's own transaction (postgres_lexical.py), and every
write that changes which chunks carry which vector updates the vector moments in the same
transaction (postgres_vectors.py). So whatever a transaction commits is searchable, in every
worker, the moment it commits.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from ...errors import KnowledgeBaseError
from ...store.urls import connection_problem, parse_postgres
from ..analysis import Analyzer
from ..chunking import Chunk
from . import postgres_lexical as lexical
from . import postgres_vectors as vectors
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
            # pgvector returns at most ef_search rows from its HNSW index: as many as a
            # search asks for (postgres_vectors.py).
            conn.execute(f"SET hnsw.ef_search = {vectors.HNSW_EF_SEARCH}")

        self._pool = psycopg_pool.ConnectionPool(
            url.conninfo, min_size=1, max_size=POOL_SIZE, configure=configure, open=True,
            kwargs={"autocommit": True}, name=f"agentmodes-{self.schema}")
        self._closed = threading.Event()
        # Documents are analysed as they are stored; the KB's search index sets the language.
        self.analyzer = Analyzer("auto")

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
    def transaction(self, pipeline: bool = False, durable: bool = True) -> Iterator[Any]:
        """A write transaction holding the KB's write lock (its revision row).

        `pipeline`: statements go out without waiting for the ones before (a cursor's fetch
        waits for its own answer), so a document costs a few round trips, not one per
        statement. `durable=False` (ingest writes): the commit does not wait for the WAL to
        reach the disk; a crash may lose the last documents committed, never part of one,
        and the next ingest adds them again (as SQLite's WAL with synchronous=NORMAL)."""
        with self._conn() as conn, (conn.pipeline() if pipeline else nullcontext()), \
                conn.transaction():
            if not durable:
                conn.execute("SET LOCAL synchronous_commit = off")
            conn.execute("SELECT value FROM meta WHERE key = 'revision' FOR UPDATE")
            yield conn

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A connection of the pool (autocommit), with errors as one line."""
        with self._conn() as conn:
            yield conn

    @contextmanager
    def snapshot(self, pipeline: bool = False) -> Iterator[Any]:
        """A read-only transaction whose statements all see one state of the KB; with
        `pipeline`, statements are sent without waiting for the ones before (psycopg's
        pipeline mode: a cursor's fetch waits for its own answer)."""
        with self._conn() as conn, (conn.pipeline() if pipeline else nullcontext()), \
                conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            conn.execute("SET LOCAL enable_sort = off")    # postgres_lexical.py says why
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
        analysed = lexical.analyse(self.analyzer, chunks)      # before taking the write lock
        new = Counter(c.text_hash for c in chunks)
        with self.transaction(pipeline=True, durable=False) as conn:
            row = conn.execute("SELECT id, content_hash FROM documents WHERE path = %s",
                               (path,)).fetchone()
            if row and row[1] == content_hash and not force:
                conn.execute("UPDATE documents SET mtime = %s, size = %s WHERE id = %s",
                             (mtime, size, row[0]))
                return "unchanged"
            old_id = row[0] if row else None
            old = conn.execute("SELECT text_hash FROM chunks WHERE doc_id = %s", (old_id,))
            touched = conn.execute(vectors.TOUCHED_SQL, {"hashes": list(new), "doc": old_id})
            if row:
                lexical.unindex_chunks(conn, "doc_id = %s", (old_id,))
                conn.execute("DELETE FROM documents WHERE id = %s", (old_id,))
            if chunks:
                conn.execute(lexical.INSERT_DOCUMENT_SQL, lexical.document_params(
                    path, root, title, content_hash, mtime, size, chunks, analysed))
            else:
                conn.execute("INSERT INTO documents (path, root, title, content_hash, mtime, "
                             "size) VALUES (%s, %s, %s, %s, %s, %s)",
                             (path, root, title, content_hash, mtime, size))
            lexical.count_terms(conn, analysed)
            self._bump_revision(conn)
            # Vectors of texts this edit gave or took chunks: unchanged text cancels out.
            before = Counter(r[0] for r in old.fetchall())
            vectors.shift_moments(conn, touched.fetchall(), new - before, before - new)
            return "updated" if row else "added"

    def remove_document(self, path: str) -> bool:
        with self.transaction(pipeline=True) as conn:
            row = conn.execute("SELECT id FROM documents WHERE path = %s", (path,)).fetchone()
            if row is None:
                return False
            old = conn.execute("SELECT text_hash FROM chunks WHERE doc_id = %s", (row[0],))
            touched = conn.execute(vectors.TOUCHED_SQL, {"hashes": [], "doc": row[0]})
            lexical.unindex_chunks(conn, "doc_id = %s", (row[0],))
            conn.execute("DELETE FROM documents WHERE id = %s", (row[0],))
            self._bump_revision(conn)
            vectors.shift_moments(conn, touched.fetchall(), Counter(),
                                  Counter(r[0] for r in old.fetchall()))
            return True

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

    def put_vectors(self, embedder: str, hashes: list[str], matrix: np.ndarray) -> None:
        """Store vectors of texts (a text already embedded keeps its vector) and add them to
        the moments once per chunk carrying the text."""
        with self.transaction() as conn:
            known = {r[0] for r in conn.execute(
                "SELECT text_hash FROM embeddings WHERE embedder = %s AND text_hash = ANY(%s)",
                (embedder, list(hashes)))}
            fresh = {h: v for h, v in zip(hashes, matrix) if h not in known}
            if not fresh:
                return
            with conn.cursor(binary=True) as cur, cur.copy(
                    "COPY embeddings (embedder, text_hash, vector) FROM STDIN (FORMAT BINARY)"
                    ) as copy:
                copy.set_types(["text", "text", "vector"])
                for text_hash, vector in fresh.items():
                    copy.write_row((embedder, text_hash,
                                    np.ascontiguousarray(vector, dtype=np.float32)))
            carriers = dict(conn.execute("SELECT text_hash, COUNT(*) FROM chunks WHERE "
                                         "text_hash = ANY(%s) GROUP BY text_hash",
                                         (list(fresh),)).fetchall())
            if carriers:
                kept = [h for h in fresh if h in carriers]
                moments = vectors.VectorMoments.read(conn, embedder, lock=True).shifted(
                    np.stack([np.asarray(fresh[h], dtype=np.float32) for h in kept]),
                    np.array([carriers[h] for h in kept], dtype=np.float64))
                moments.write(conn, embedder)
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
        return [r[0] for r in rows], np.stack([vectors.as_array(r[1]) for r in rows])

    def prune_vectors(self) -> int:
        with self.transaction() as conn:
            return conn.execute("DELETE FROM embeddings e WHERE NOT EXISTS (SELECT 1 FROM "
                                "chunks c WHERE c.text_hash = e.text_hash)").rowcount

    def drop_vectors_except(self, embedder: str | None) -> None:
        with self.transaction() as conn:
            conn.execute("DELETE FROM embeddings WHERE embedder IS DISTINCT FROM %s", (embedder,))
            conn.execute("DELETE FROM vector_moments WHERE embedder IS DISTINCT FROM %s",
                         (embedder,))
            vectors.drop_indexes_except(conn, embedder)
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
        """Search in SQL (postgres_search.py); documents stored from now on are analysed in
        `language` ("auto": each chunk in the language it is detected in)."""
        from .postgres_search import PostgresIndex
        index = PostgresIndex(self, load_embedder, language)
        self.analyzer = index.analyzer
        return index

    def backfill(self, analyzer: Analyzer) -> None:
        """Analyse the chunks and sum the vectors of a KB stored by schema version 1."""
        with self.transaction() as conn:
            if conn.execute("SELECT 1 FROM meta WHERE key = 'backfill'").fetchone() is None:
                return                                  # another process did it meanwhile
            lexical.backfill(conn, analyzer)
            vectors.rebuild_moments(conn)
            conn.execute("DELETE FROM meta WHERE key = 'backfill'")
            self._bump_revision(conn)


_CHUNK = ("SELECT c.id, c.doc_id, c.position, c.title, c.heading_path, c.text, c.text_hash, "
          "d.path FROM chunks c JOIN documents d ON d.id = c.doc_id")


def _chunk_row(row: tuple) -> ChunkRow:
    heading = row[4] if isinstance(row[4], list) else json.loads(row[4])
    return ChunkRow(row[0], row[1], row[2], row[3], heading, row[5], row[6], row[7])


def _like_prefix(prefix: str) -> str:
    """A LIKE pattern matching exactly the strings that start with `prefix`."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
