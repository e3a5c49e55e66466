"""Load on a live `agentmodes serve`: N concurrent WebSocket chats with the scripted model.

What it shows: the server's own cost (HTTP/WebSocket, threads, SQLite writes, the agent
loop, KB search) with the LLM taken out. Per concurrency level: errors, whether every
answer was persisted, time to first event p50/p95, answer latency, messages per second, and
ratios against one chat and against the same service called in-process (no HTTP).

    agentmodes bench server --levels 1,20,100 --messages 5
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..server.process import running_server
from .results import write_results

DOCS = {
    "kontakt.md": "# Kontakt\n\nDie DG Agentur hat montags bis freitags von 9 bis 18 Uhr "
                  "geöffnet, samstags nach Vereinbarung.\n\n## Telefon\n\nWir sind unter "
                  "+49 911 97554990 erreichbar.\n",
    "impressum.md": "# Impressum\n\nDG Agentur, Bahnhofstraße 2, 90402 Nürnberg. "
                    "E-Mail office@dg-agentur.de.\n",
    "leistungen.md": "# Leistungen\n\nWir beraten zu Webseiten, Hosting und Datenschutz. "
                     "Eine Beratungsstunde kostet 90 Euro.\n",
}
SCRIPT = [
    'REFLECTION: Ich weiß noch nichts über die Öffnungszeiten.\n'
    'ACTION: rag_search("Öffnungszeiten DG Agentur")',
    'REFLECTION: Die Suche ergab die Öffnungszeiten. Das Ziel ist erreicht.\n'
    'FINAL ANSWER: Die DG Agentur hat Montag bis Freitag von 9 bis 18 Uhr geöffnet [1].',
]
EXPECTED = "Die DG Agentur hat Montag bis Freitag von 9 bis 18 Uhr geöffnet [1]."


@dataclass(slots=True)
class LevelResult:
    label: str
    concurrency: int
    messages: int
    errors: int
    persisted: int
    ttfe_p50_ms: float
    ttfe_p95_ms: float
    latency_p50_ms: float
    latency_p95_ms: float
    wall_s: float
    messages_per_s: float


def _prepare(work: Path) -> tuple[Path, Path]:
    """A small lexical-only KB (no embedding model in the loop) and the reply script."""
    from ..knowledge.base import KnowledgeBase
    docs = work / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    kb = work / "kb.db"
    with KnowledgeBase.open(kb) as base:
        base.ingest([str(docs)], embed=False)
    script = work / "script.json"
    script.write_text(json.dumps(SCRIPT, ensure_ascii=False), encoding="utf-8")
    return kb, script


def _server(db: Path, kb: Path, script: Path):
    # Without keys, as a local user runs it (the keys in this shell are not for the bench).
    env = {k: v for k, v in os.environ.items()
           if k not in ("AGENTMODES_API_KEY", "AGENTMODES_CHAT_API_KEY")}
    # It measures capacity: every chat must be admitted, none refused by the per-key rate
    # limit or the run queue (both protect a real server; see the README's Security).
    env.update(AGENTMODES_RATE_CHAT="off", AGENTMODES_RUN_QUEUE="100000")
    return running_server(db, kb=kb, llm=f"scripted:{script}", env=env)


async def _chat(url: str, messages: int, ttfe: list, latency: list, errors: list) -> None:
    """One chat: one WebSocket, `messages` questions in one conversation, one at a time."""
    from websockets.asyncio.client import connect
    conversation = None
    try:
        async with connect(url.replace("http", "ws", 1) + "/api/ws", max_size=None,
                           open_timeout=60) as ws:
            for i in range(messages):
                request = {"message": f"Wann hat die DG Agentur geöffnet? ({i})"}
                if conversation:
                    request["conversation_id"] = conversation
                sent = time.perf_counter()
                await ws.send(json.dumps(request))
                first = None
                while True:
                    event = json.loads(await ws.recv())
                    first = first or time.perf_counter()
                    if event.get("done"):
                        conversation = event["conversation_id"]
                        if event.get("full_response") != EXPECTED:
                            errors.append(f"unexpected answer {event.get('full_response')!r}")
                        break
                    if event.get("fatal") or event.get("code"):
                        errors.append(event.get("message", "error event"))
                        break
                ttfe.append((first - sent) * 1000)
                latency.append((time.perf_counter() - sent) * 1000)
    except Exception as err:        # a dropped connection is an error of the run, not a crash
        errors.append(f"{type(err).__name__}: {err}")


def _completed(db: Path) -> int:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT COUNT(*) FROM chatbot_messages WHERE role = 'assistant' "
                            "AND status = 'complete'").fetchone()[0]


def _result(label: str, concurrency: int, ttfe: list, latency: list, errors: int,
            persisted: int, wall: float) -> LevelResult:
    def pct(values: list, q: float) -> float:
        return round(float(np.percentile(values, q)), 2) if values else float("nan")
    return LevelResult(label, concurrency, len(latency), errors, persisted, pct(ttfe, 50),
                       pct(ttfe, 95), pct(latency, 50), pct(latency, 95), round(wall, 3),
                       round(len(latency) / wall, 2) if wall else 0.0)


def run_level(url: str, db: Path, concurrency: int, messages: int) -> tuple[LevelResult, list]:
    ttfe: list[float] = []
    latency: list[float] = []
    errors: list[str] = []
    before = _completed(db)

    async def main() -> None:
        await asyncio.gather(*(_chat(url, messages, ttfe, latency, errors)
                               for _ in range(concurrency)))

    started = time.perf_counter()
    asyncio.run(main())
    wall = time.perf_counter() - started
    persisted = _completed(db) - before
    label = f"server, {concurrency} concurrent WebSocket chat{'s' if concurrency > 1 else ''}"
    return _result(label, concurrency, ttfe, latency, len(errors), persisted, wall), errors


def run_in_process(work: Path, kb: Path, messages: int) -> LevelResult:
    """The same questions through AgentChatService directly: the no-transport reference."""
    from ..llm.scripted import ScriptedModel
    from ..service import AgentChatService
    from ..store.chat import ChatStore
    service = AgentChatService(ChatStore.open(work / "inproc.db"), data_dir=work / "inproc",
                               llm_factory=lambda: ScriptedModel(SCRIPT))
    service.ensure_chatbot("default", kb_path=str(kb))
    ttfe, latency, errors = [], [], 0
    warm = service.ask("default", "Aufwärmen: Wann hat die DG Agentur geöffnet?")
    errors += warm.content != EXPECTED
    conversation = None
    started = time.perf_counter()
    for i in range(messages):
        sent = time.perf_counter()
        first = None
        for event in service.stream("default", f"Wann hat die DG Agentur geöffnet? ({i})",
                                    conversation_id=conversation):
            first = first or time.perf_counter()
            if event.get("done"):
                conversation = event["conversation_id"]
                errors += event.get("full_response") != EXPECTED
        ttfe.append((first - sent) * 1000)
        latency.append((time.perf_counter() - sent) * 1000)
    wall = time.perf_counter() - started
    persisted = _completed(work / "inproc.db") - 1     # without the warm-up
    service.close()
    return _result("in-process AgentChatService (no HTTP), sequential", 1, ttfe, latency,
                   errors, persisted, wall)


def run_server_load(levels: list[int], messages: int, out_dir: Path,
                    progress=None) -> dict:
    with tempfile.TemporaryDirectory(prefix="agentmodes-bench-server-") as tmp:
        work = Path(tmp)
        kb, script = _prepare(work)
        rows = [run_in_process(work, kb, max(messages * 4, 20))]
        all_errors: list[str] = []
        with _server(work / "chat.db", kb, script) as url:
            # Warm-up (imports, the KB's in-memory index, SQLite pages): not measured, but
            # checked for errors like any other chat.
            _, errors = run_level(url, work / "chat.db", 2, 2)
            all_errors.extend(errors[:5])
            for level in levels:
                if progress:
                    progress(f"{level} concurrent chats x {messages} messages")
                row, errors = run_level(url, work / "chat.db", level, messages)
                rows.append(row)
                all_errors.extend(errors[:5])
    report = {"benchmark": "server_load", "messages_per_chat": messages,
              "llm": "scripted (2 calls per answer: search, then answer)",
              "cpu_count": os.cpu_count(),
              # The machine is shared: the load average says how much CPU others took.
              "load_avg_1m_after": round(os.getloadavg()[0], 2),
              "rows": [asdict(r) for r in rows],
              "sample_errors": all_errors}
    write_report(report, out_dir)
    return report


def _ratios(report: dict) -> list[dict]:
    rows = report["rows"]
    base = next((r for r in rows if r["concurrency"] == 1 and r["label"].startswith("server")),
                rows[0])
    inproc = rows[0]
    out = []
    for r in rows:
        out.append({**r,
                    "throughput_vs_1_chat": round(r["messages_per_s"] / base["messages_per_s"], 2)
                    if base["messages_per_s"] else None,
                    "throughput_vs_in_process": round(r["messages_per_s"]
                                                      / inproc["messages_per_s"], 2)
                    if inproc["messages_per_s"] else None})
    return out


def markdown(report: dict) -> str:
    head = ("| setup | messages | errors | persisted | TTFE p50 ms | TTFE p95 ms | latency p50 ms "
            "| latency p95 ms | msgs/s | x vs 1 chat | x vs in-process |")
    lines = [f"# Server load ({report['llm']}, {report['messages_per_chat']} messages per chat, "
             f"{report['cpu_count']} CPUs, load average {report.get('load_avg_1m_after')} "
             "after the run)", "", head, "|" + "---|" * 11]
    for r in _ratios(report):
        lines.append(f"| {r['label']} | {r['messages']} | {r['errors']} | {r['persisted']} "
                     f"| {r['ttfe_p50_ms']} | {r['ttfe_p95_ms']} | {r['latency_p50_ms']} "
                     f"| {r['latency_p95_ms']} | {r['messages_per_s']} "
                     f"| {r['throughput_vs_1_chat']} | {r['throughput_vs_in_process']} |")
    lines += ["", "TTFE: time from sending a question to its first event. Persisted: assistant "
              "messages stored with status `complete` during that level."]
    return "\n".join(lines) + "\n"


def write_report(report: dict, out_dir: Path) -> tuple[Path, Path]:
    report = {**report, "rows": _ratios(report)}
    return write_results(out_dir, "server_load", report, markdown(report))


def parse_levels(text: str) -> list[int]:
    from ..errors import ConfigError
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--levels takes whole numbers separated by commas, not {text!r}") \
            from None
    if not levels or min(levels) < 1:
        raise ConfigError("--levels needs at least one concurrency of 1 or more")
    return levels

