"""One question in two or three modes at once, as one stream of frames (the page's compare
view, `POST /api/chatbots/{name}/compare`).

Frames, in the order they happen (lanes interleave when they run in parallel):
    {"lane": "react", "event": {...}}          every event of that mode's run, as streamed
    {"lane": "react", "figures": {...}}        after its done event: figures.py's figures
    {"lane": "react", "error": "..."}          the run failed (the other lanes go on)
    {"compare_done": true, "lanes": [...]}     last
Lanes run in parallel when the model serves several calls at once (runner.parallel_calls),
else one after another. Closing the stream (the client left) stops every lane: each lane
closes its own run in its own thread, which closes its LLM request. A comparison is an
experiment: nothing is stored as a conversation.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence

from ..errors import AgentModesError
from ..events import Event
from ..review_pass import review_answer
from .figures import FigureFold
from .runner import kept, parallel_calls

Frame = dict[str, Any]
_END = object()


@dataclass(slots=True)
class Lane:
    name: str                                  # the mode, "+reflection" when reviewed
    start: Callable[[], Iterator[Event]]       # the run's events (raises on bad input)


def lane_frames(lane: Lane, stop: threading.Event) -> Iterator[Frame]:
    """One lane's frames; stops (closing its run) as soon as `stop` is set."""
    fold = FigureFold(lane.name)
    events: Optional[Iterator[Event]] = None
    try:
        events = lane.start()
        for event in events:
            if stop.is_set():
                return
            if kept(event):
                fold.add(event)
            yield {"lane": lane.name, "event": event}
            if event.get("done"):
                yield {"lane": lane.name, "figures": fold.figures.as_dict()}
                return
        yield {"lane": lane.name, "error": "the run ended without an answer"}
    except Exception as err:  # noqa: BLE001 - one lane's failure must not end the others
        message = str(err) if isinstance(err, AgentModesError) else \
            f"internal error ({type(err).__name__})"
        yield {"lane": lane.name, "error": message}
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


def compare_stream(lanes: Sequence[Lane], parallel: bool) -> Iterator[Frame]:
    """All lanes' frames as one stream, then {"compare_done": true}."""
    stop = threading.Event()
    try:
        if parallel and len(lanes) > 1:
            yield from _merged(lanes, stop)
        else:
            for lane in lanes:
                yield from lane_frames(lane, stop)
        yield {"compare_done": True, "lanes": [lane.name for lane in lanes]}
    finally:
        stop.set()


def _merged(lanes: Sequence[Lane], stop: threading.Event) -> Iterator[Frame]:
    frames: queue.Queue = queue.Queue()

    def work(lane: Lane) -> None:
        try:
            for frame in lane_frames(lane, stop):
                frames.put(frame)
        finally:
            frames.put(_END)

    for lane in lanes:
        threading.Thread(target=work, args=(lane,), name=f"compare-{lane.name}",
                         daemon=True).start()
    running = len(lanes)
    while running:
        frame = frames.get()
        if frame is _END:
            running -= 1
        else:
            yield frame


def chatbot_lanes(service: Any, chatbot: str, question: str, modes: Sequence[str],
                  reflect: int = 0) -> tuple[list[Lane], bool]:
    """The lanes for one of the service's chatbots (its settings, KB and model), and
    whether they may run in parallel. Bad input (unknown chatbot or mode, empty question)
    raises here, before any frame."""
    question = (question or "").strip()
    if not question:
        raise AgentModesError("the question is empty")
    bot = service.get_chatbot(chatbot)
    knowledge = service.knowledge(bot)
    lanes, models = [], []
    for mode in modes:
        settings = service.settings_for(bot, mode)
        llm = service.llm_factory()
        models.append(llm)
        agent = service.agent_factory(llm=llm, knowledge=knowledge, settings=settings)
        name = mode + ("+reflection" if reflect else "")
        lanes.append(Lane(name, _runner(agent, llm, question, reflect, settings.language)))
    return lanes, all(parallel_calls(m) for m in models)


def _runner(agent: Any, llm: Any, question: str, reflect: int, language: str
            ) -> Callable[[], Iterator[Event]]:
    def start() -> Iterator[Event]:
        events = agent.stream(question)
        if not reflect:
            return events
        return _reviewed(events, llm, question, reflect, language)
    return start


def _reviewed(events: Iterator[Event], llm: Any, question: str, rounds: int,
              language: str) -> Iterator[Event]:
    """The run's events, its done event held back for a Reflection pass on top."""
    try:
        for event in events:
            if not event.get("done"):
                yield event
                continue
            yield from review_answer(llm, question, event, rounds=rounds, language=language)
            return
    finally:
        events.close()
