"""Drive the service's synchronous event generator from async code, one event at a time.

Each `next()` runs in the run's own worker thread, so a slow LLM never blocks the event loop.
Pulling (rather than a thread running the generator ahead) keeps runs in step with their
clients: under load every run gets its first event out early instead of some runs racing
to the end while others wait (measured with `agentmodes bench server`). When the
consumer stops early (client disconnected, cancel message, task cancelled) the generator is
closed — in a shielded scope, so a cancellation cannot skip it — which closes the agent's
stream and its LLM request and lets the service store the partial answer as `cancelled`.

Every run is admitted by the app's RunPool (admission.py) before its question is stored,
and gives its slot back when its generator closes; `cancel_on_disconnect` ends a run whose
HTTP client has gone away while it waited or ran.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable, Iterator

import anyio
import anyio.to_thread
from starlette.requests import HTTPConnection, Request
from starlette.responses import StreamingResponse

from ..events import Event
from .admission import RunPool, SlotHolder

_END = object()


async def open_stream(conn: HTTPConnection, start: Callable[[], Iterator[Event]]
                      ) -> Iterator[Event]:
    """Wait for a run slot (admission.Busy if the queue is full), then call `start` (which
    validates and writes the user message) off the event loop. The generator returned
    holds the slot until it is closed."""
    pool: RunPool = conn.app.state.run_pool
    started = await pool.acquire()
    try:
        gen = await anyio.to_thread.run_sync(start)
    except BaseException:
        pool.release(started)
        raise
    return SlotHolder(gen, pool, started)


@asynccontextmanager
async def cancel_on_disconnect(request: Request) -> AsyncIterator[None]:
    """Cancel the body of the `async with` when the HTTP client disconnects (its request
    body has been read, so the next ASGI message is the disconnect)."""
    with anyio.CancelScope() as scope:
        async def watch() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass
            scope.cancel()

        watcher = asyncio.ensure_future(watch())
        try:
            yield
        finally:
            watcher.cancel()


@asynccontextmanager
async def events_of(gen: Iterator[Event]) -> AsyncIterator[AsyncIterator[Event]]:
    """`async with events_of(gen) as events: async for e in events: ...` — always closes gen."""
    loop = asyncio.get_running_loop()
    # One thread per run: the generator is only ever touched by it (a generator cannot be
    # closed while another thread is inside it), so the close waits for the step in flight.
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="run")

    async def iterate() -> AsyncIterator[Event]:
        while True:
            event = await loop.run_in_executor(worker, next, gen, _END)
            if event is _END:
                return
            yield event

    try:
        yield iterate()
    finally:
        with anyio.CancelScope(shield=True):
            await loop.run_in_executor(worker, gen.close)
        worker.shutdown(wait=False)


# Proxies (nginx) pass the stream through unbuffered; browsers never cache it.
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse_response(frames: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)


def sse_events(gen: Iterator[Event]) -> StreamingResponse:
    """A started run's events (open_stream) as one `data:` JSON frame each."""
    async def frames() -> AsyncIterator[str]:
        async with events_of(gen) as events:
            async for event in events:
                yield sse(event)

    return sse_response(frames())


def sse(data: Any, event: str | None = None) -> str:
    """One Server-Sent Events frame."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n"
