"""A real OpenAI-compatible /v1/embeddings server on 127.0.0.1 for tests of server processes.

A `serve` subprocess cannot be handed a Python test embedder, but it can be pointed at an
embeddings endpoint (AGENTMODES_EMBEDDER=openai:hashing, OPENAI_BASE_URL): this one answers
with kb_fixtures.HashingEmbedder's deterministic vectors, optionally after a delay per request
(to keep an ingest running long enough to kill the worker doing it).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kb_fixtures import HashingEmbedder

MODEL = "hashing"


class HashingEmbeddingServer:
    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.requests = 0
        embedder = HashingEmbedder()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests += 1
                if outer.delay:
                    threading.Event().wait(outer.delay)
                vectors = embedder.embed_passages(list(body["input"]))
                payload = json.dumps({"data": [{"index": i, "embedding": v.tolist()}
                                               for i, v in enumerate(vectors)]}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:            # the worker that asked was killed meanwhile
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def env(self) -> dict[str, str]:
        """What a `serve` process needs to embed with this server."""
        return {"AGENTMODES_EMBEDDER": f"openai:{MODEL}", "OPENAI_BASE_URL": self.url,
                "OPENAI_API_KEY": "test"}

    def embedder(self):
        from agentmodes.knowledge.embedders import OpenAIEmbedder
        return OpenAIEmbedder(MODEL, base_url=self.url, api_key="test")

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
