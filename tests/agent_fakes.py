"""Fakes for the agent-runtime tests: a small in-memory KB over the DG Agentur facts."""

from __future__ import annotations

from agentmodes.agent import Agent
from agentmodes.knowledge.types import Hit
from agentmodes.llm.scripted import ScriptedModel
from agentmodes.settings import ChatbotSettings

DOCS = [
    (1, "Kontakt", "kontakt.md", "Öffnungszeiten: Mo-Fr 9-18 Uhr, Sa nach Vereinbarung"),
    (2, "Kontakt", "kontakt.md", "Wir sind telefonisch unter +49 911 97554990 erreichbar"),
    (3, "Impressum", "impressum.html", "E-Mail office@dg-agentur.de, Bahnhofstraße 2, 90402 Nürnberg"),
    (4, "Leistungen", "leistungen.md", "Webentwicklung, Online-Marketing, KI-Assistenten"),
]


class FakeKB:
    """Word-overlap search with a fixed confidence; records the queries it was asked."""

    def __init__(self, confidence: float = 0.5, docs=DOCS):
        self.confidence = confidence
        self.docs = docs
        self.queries: list[tuple[str, str]] = []

    def search(self, query: str, mode: str = "hybrid", k: int = 5) -> list[Hit]:
        self.queries.append((query, mode))
        words = {w.lower().strip('?.,"') for w in query.split() if len(w) > 2}
        scored = []
        for chunk_id, title, source, text in self.docs:
            overlap = sum(w in text.lower() or w in title.lower() for w in words)
            if overlap:
                scored.append((overlap, chunk_id, title, source, text))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [Hit(chunk_id=c, title=t, source=s, text=x, score=float(o),
                    confidence=self.confidence if i == 0 else self.confidence / 2)
                for i, (o, c, t, s, x) in enumerate(scored[:k])]


def make_agent(replies, *, kb=None, supports_tools=False, **settings) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(replies, supports_tools=supports_tools)
    settings.setdefault("high_confidence_threshold", 0.9)
    agent = Agent(llm=model, knowledge=kb if kb is not None else FakeKB(),
                  settings=ChatbotSettings(**settings))
    return agent, model


def statuses(events) -> list[str]:
    return [e["status"] for e in events if "status" in e]


def done_of(events) -> dict:
    assert events[-1].get("done") is True
    return events[-1]


def check_well_formed(events) -> None:
    """The grammar of an event stream, whatever the model said: starting first, done last,
    each iteration opened by its start status, every action answered by an observation (or
    ending the run), answer deltas only after final_answer, usage after every LLM call."""
    from agentmodes.events import STATUSES

    assert events[0]["status"] == "starting" and events[-1].get("done") is True
    assert sum(1 for e in events if e.get("done")) == 1
    done = events[-1]
    assert done["full_response"].strip() and isinstance(done["sources"], list) and done["goal"]
    seen_final = False
    pending_action = None
    for prev, e in zip(events, events[1:]):
        if e.get("done"):
            break
        if "status" not in e:
            assert seen_final, "answer delta before final_answer"
            continue
        status = e["status"]
        assert status in STATUSES, status
        if prev.get("status") == "iteration":
            assert status in ("reflecting", "getting_action"), status
        if status == "action":
            pending_action = e
        elif status in ("observation", "final_answer", "repeated_action", "error"):
            pending_action = None
        elif status == "iteration":
            assert pending_action is None, f"action without observation: {pending_action}"
        if status == "final_answer":
            seen_final = True
    assert seen_final
    assert sum(1 for e in events if e.get("status") == "final_answer") == 1
