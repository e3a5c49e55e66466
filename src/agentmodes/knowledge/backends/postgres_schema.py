"""Where a knowledge base lives in PostgreSQL, and making sure it is there (or refusing).

One database holds the chat store and any number of knowledge bases: each KB is a schema of
its own, `kb_<name>`, named by the URL's `kb=` parameter (default `default`). A schema per
KB rather than a kb_id column in shared tables: each KB's vector column gets its own
dimension (the embedder's) and its own HNSW index, the planner keeps statistics per KB,
and deleting a KB is one DROP SCHEMA.

Versions: the KB's `meta` table records `schema_version`, as in the SQLite file; opening an
older one runs the upgrade steps below in one transaction under a per-KB advisory lock
(several workers may open it at once); a new KB is made by version 1 plus every upgrade, so
both paths run the same DDL. Version 2 adds the search tables (postgres_lexical.py,
postgres_vectors.py); chunks stored by version 1 are analysed into them by the first process
that opens the KB afterwards (`backfill` in meta). These steps are plain PostgreSQL DDL and the KB's
tables are not the chat store's, so they are not Alembic revisions: the two have separate
version records on purpose (a KB schema can be created in a database without a chat store).

Refusals, each one line, and nothing written (all checks come before the first CREATE, and
the creation is one transaction):
- a URL without `kb=` that points at a chat database: which KB is meant is ambiguous there;
- a server without pgvector, or a role that may not install it;
- a KB written by a newer agentmodes; create=False and no such KB.
"""

from __future__ import annotations

from typing import Any

from ...errors import KnowledgeBaseError
from ...store.urls import DatabaseError, PostgresURL, connect

APP_MARKER = "agentmodes-kb"
SCHEMA_VERSION = 2
DEFAULT_KB = "default"

# Version 1: the same tables as the SQLite file; vectors typed to the embedder's dimension
# and indexed (HNSW) when the first ones arrive (postgres.py), because the dimension is not
# known before.
_VERSION_1 = """
CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE documents (
    id bigserial PRIMARY KEY,
    path text NOT NULL UNIQUE,
    root text NOT NULL,
    title text NOT NULL,
    content_hash text NOT NULL,
    mtime double precision NOT NULL,
    size bigint NOT NULL,
    ingested_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX documents_path_prefix ON documents (path text_pattern_ops);
CREATE TABLE chunks (
    id bigserial PRIMARY KEY,
    doc_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    position integer NOT NULL,
    title text NOT NULL,
    heading_path jsonb NOT NULL,
    text text NOT NULL,
    text_hash text NOT NULL,
    UNIQUE (doc_id, position)
);
CREATE INDEX chunks_text_hash ON chunks (text_hash);
CREATE TABLE embeddings (
    embedder text NOT NULL,
    text_hash text NOT NULL,
    vector vector NOT NULL,
    PRIMARY KEY (embedder, text_hash)
);
"""
# Version 2: search inside the database. Per chunk its analysed terms (the forward index:
# distinct term keys in order of first occurrence, for feedback and coverage), language and
# length; a postings table whose primary key covers (term, chunk) and includes tf and length,
# so BM25 of a query term is one index-only range scan; document frequencies; the sum and
# Gram matrix of the vectors per embedder (closed-form z-scores, dense.py), stored without
# compression (random float64 does not compress, and trying costs CPU on every write).
_VERSION_2 = """
ALTER TABLE chunks ADD COLUMN lang smallint, ADD COLUMN doclen integer, ADD COLUMN terms bigint[];
CREATE TABLE postings (
    term bigint NOT NULL,
    chunk_id bigint NOT NULL,
    tf integer NOT NULL,
    doclen integer NOT NULL,
    PRIMARY KEY (term, chunk_id) INCLUDE (tf, doclen)
);
CREATE TABLE terms (term bigint PRIMARY KEY, df integer NOT NULL);
CREATE TABLE vector_moments (
    embedder text PRIMARY KEY,
    count bigint NOT NULL,
    total bytea NOT NULL,
    gram bytea NOT NULL
);
ALTER TABLE vector_moments ALTER COLUMN total SET STORAGE EXTERNAL,
    ALTER COLUMN gram SET STORAGE EXTERNAL;
INSERT INTO meta (key, value) VALUES ('lexical_chunks', '0'), ('lexical_length', '0'),
    ('lexical_en', '0'), ('lexical_de', '0') ON CONFLICT (key) DO NOTHING;
INSERT INTO meta (key, value) SELECT 'backfill', '1' WHERE EXISTS (SELECT 1 FROM chunks)
    ON CONFLICT (key) DO NOTHING;
"""
UPGRADES: dict[int, str] = {2: _VERSION_2}     # version reached -> DDL from the version before


def schema_name(kb: str) -> str:
    return f"kb_{kb}"


def quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def open_kb(url: PostgresURL, *, create: bool) -> tuple[Any, str]:
    """A connection to the database with the KB's schema ready; (connection, schema name)."""
    try:
        conn = connect(url, autocommit=True)
    except DatabaseError as err:
        raise KnowledgeBaseError(str(err)) from None
    try:
        name = url.kb or DEFAULT_KB
        schema = schema_name(name)
        version = _version(conn, schema)
        if version is None:
            if url.kb is None and _is_chat_database(conn):
                raise KnowledgeBaseError(
                    f"{url.display} is an agentmodes chat database; name the knowledge base "
                    f"in it with ?kb=NAME (e.g. {url.display}{'&' if '?' in url.display else '?'}"
                    "kb=handbook)")
            if not create:
                raise KnowledgeBaseError(
                    f"no knowledge base {name!r} in {url.display}; create it with "
                    f"`agentmodes ingest PATH --kb {url.display}`")
            _require_pgvector(conn, url)
            _create(conn, schema, url)
        elif version > SCHEMA_VERSION:
            raise KnowledgeBaseError(
                f"knowledge base {name!r} in {url.display} was written by a newer agentmodes "
                f"(schema {version}); upgrade agentmodes to open it")
        elif version < SCHEMA_VERSION:
            _upgrade(conn, schema)
        conn.execute(f"SET search_path TO {quoted(schema)}, public")
        return conn, schema
    except BaseException:
        conn.close()
        raise


def drop_kb(location: str) -> bool:
    """Delete the knowledge base at `location` (its schema and everything in it)."""
    from ...store.urls import parse_postgres
    url = parse_postgres(location)
    try:
        conn = connect(url, autocommit=True)
    except DatabaseError as err:
        raise KnowledgeBaseError(str(err)) from None
    with conn:
        schema = schema_name(url.kb or DEFAULT_KB)
        if _version(conn, schema) is None:
            return False
        with conn.transaction():
            _lock(conn, schema)
            conn.execute(f"DROP SCHEMA {quoted(schema)} CASCADE")
        return True


def _version(conn: Any, schema: str) -> int | None:
    row = conn.execute("SELECT to_regclass(%s)", (f"{quoted(schema)}.meta",)).fetchone()
    if row[0] is None:
        return None
    values = dict(conn.execute(f"SELECT key, value FROM {quoted(schema)}.meta WHERE key IN "
                               "('app', 'schema_version')").fetchall())
    if values.get("app") != APP_MARKER:
        raise KnowledgeBaseError(f"schema {schema} exists but is not an agentmodes "
                                 "knowledge base")
    return int(values.get("schema_version") or 0)


def _is_chat_database(conn: Any) -> bool:
    row = conn.execute("SELECT to_regclass('public.chatbots') IS NOT NULL AND "
                       "to_regclass('public.alembic_version') IS NOT NULL").fetchone()
    return bool(row[0])


def _require_pgvector(conn: Any, url: PostgresURL) -> None:
    installed = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
    available = installed or conn.execute(
        "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    if not available:
        raise KnowledgeBaseError(
            f"PostgreSQL at {url.display} has no pgvector extension, which knowledge bases "
            "need; install pgvector on the server (e.g. the pgvector/pgvector image)")


def _create(conn: Any, schema: str, url: PostgresURL) -> None:
    import psycopg
    try:
        with conn.transaction():
            _lock(conn, schema)
            if _version(conn, schema) is not None:     # another worker was quicker
                return
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            _create_tables(conn, schema)
    except psycopg.errors.InsufficientPrivilege as err:
        detail = " ".join(str(err).split())
        raise KnowledgeBaseError(
            f"cannot create knowledge base {schema[3:]!r} in {url.display} ({detail}); ask "
            "the database owner to run CREATE EXTENSION vector, or grant CREATE") from None


def _create_tables(conn: Any, schema: str) -> None:
    conn.execute(f"CREATE SCHEMA {quoted(schema)}")
    conn.execute(f"SET LOCAL search_path TO {quoted(schema)}, public")
    conn.execute(_VERSION_1)
    for target in sorted(UPGRADES):
        conn.execute(UPGRADES[target])
    conn.execute("INSERT INTO meta (key, value) VALUES ('app', %s), "
                 "('schema_version', %s), ('revision', '0')", (APP_MARKER, str(SCHEMA_VERSION)))


def _upgrade(conn: Any, schema: str) -> None:
    with conn.transaction():
        _lock(conn, schema)
        conn.execute(f"SET LOCAL search_path TO {quoted(schema)}, public")
        version = _version(conn, schema) or 0
        for target in sorted(v for v in UPGRADES if v > version):
            conn.execute(UPGRADES[target])
            conn.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'",
                         (str(target),))


def _lock(conn: Any, schema: str) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"agentmodes:{schema}",))
