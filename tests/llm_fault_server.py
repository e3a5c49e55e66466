"""A local OpenAI-compatible HTTP server that misbehaves on cue (for the backend's tests).

Each request takes the next behaviour from a script (the last one repeats) and the request
bodies are recorded, so a test can say "429, then 500, then a good stream" and then check how
many tries the client made and what it sent.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

Behaviour = Callable[[BaseHTTPRequestHandler], None]


def text_chunk(text: str) -> dict:
    return {"object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


def tool_chunk(index: int, *, id: str | None = None, name: str | None = None,
               arguments: str = "") -> dict:
    call: dict = {"index": index, "function": {"arguments": arguments}}
    if id:
        call["id"], call["type"] = id, "function"
    if name:
        call["function"]["name"] = name
    return {"object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}


def finish_chunk(reason: str = "stop") -> dict:
    return {"object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


def usage_chunk(prompt: int, completion: int, cached: int = 0) -> dict:
    return {"object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion,
                      "prompt_tokens_details": {"cached_tokens": cached}}}


def status(code: int, body: dict | str = "", headers: dict | None = None) -> Behaviour:
    def run(h: BaseHTTPRequestHandler) -> None:
        data = (json.dumps(body) if isinstance(body, dict) else body).encode()
        h.send_response(code)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
    return run


def sse(payloads: list[dict], *, done: bool = True, cut_after: int | None = None,
        delay: float = 0.0, on_disconnect: threading.Event | None = None) -> Behaviour:
    """A chunked SSE response; `cut_after=n` drops the connection after n events."""
    def run(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        events = [f"data: {json.dumps(p)}\n\n" for p in payloads]
        if done:
            events.append("data: [DONE]\n\n")
        try:
            for i, event in enumerate(events):
                if cut_after is not None and i == cut_after:
                    h.close_connection = True      # no terminating chunk: an abrupt end
                    return
                data = event.encode()
                h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                h.wfile.flush()
                if delay:
                    time.sleep(delay)
            h.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True
            if on_disconnect is not None:
                on_disconnect.set()
    return run


def slow(seconds: float, then: Behaviour) -> Behaviour:
    def run(h: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)
        try:
            then(h)
        except (BrokenPipeError, ConnectionResetError):
            pass
    return run


class FaultServer:
    def __init__(self) -> None:
        self.script: list[Behaviour] = []
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                body["_path"] = self.path
                body["_auth"] = self.headers.get("Authorization")
                server.requests.append(body)
                self.body = body        # for behaviours that answer by what was asked
                behaviour = server.script[min(len(server.requests), len(server.script)) - 1]
                behaviour(self)

            def log_message(self, *args) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # Clients hanging up mid-stream is what these tests do on purpose; don't print it.
        self._httpd.handle_error = lambda request, client_address: None
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def play(self, *behaviours: Behaviour) -> "FaultServer":
        self.script = list(behaviours)
        self.requests = []
        return self

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
