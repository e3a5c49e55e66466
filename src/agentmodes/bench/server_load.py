"""Load on a live `agentmodes serve`: N concurrent WebSocket chats with the scripted model.

What it shows: the server's own cost (HTTP/WebSocket, threads, database writes, the agent
loop, KB search) with the LLM taken out. Per setup (database x workers) and concurrency
level: errors, whether every answer was persisted, time to first event p50/p95, answer
latency, messages per second, and ratios against SQLite with one worker at the same level
and against the same service called in-process (no HTTP).

    agentmodes bench server --levels 1,20,100 --messages 5
    agentmodes bench server --db postgresql://me@/bench?host=/run/postgresql --workers 1,2

With --db, every setup runs on SQLite (a temp file) and on that PostgreSQL database (chat
store and the bench's KB, `kb=agentmodes_bench`); it adds rows there and counts only its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
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
# The scripted model's answer as the composer hands it on: the sentence is kept, its citation
# names whichever source the ranking put the hours in (the script cannot know the number).
EXPECTED = re.compile(r"Die DG Agentur hat Montag bis Freitag von 9 bis 18 Uhr geöffnet \[\d\]\.")


def _unexpected(answer) -> bool:
    return not (isinstance(answer, str) and EXPECTED.fullmatch(answer))


@dataclass(slots=True)
class LevelResult:
    label: str
    database: str          # sqlite | postgresql | in-process
    workers: int
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


def _docs(work: Path) -> Path:
    docs = work / "docs"
    docs.mkdir(exist_ok=True)
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    return docs


def _prepare_kb(location: str, docs: Path) -> str:
    """A small lexical-only KB (no embedding model in the loop)."""
    from ..knowledge.base import KnowledgeBase
    with KnowledgeBase.open(location) as base:
        base.ingest([str(docs)], embed=False)
    return location


def _script(work: Path) -> Path:
    script = work / "script.json"
    script.write_text(json.dumps(SCRIPT, ensure_ascii=False), encoding="utf-8")
    return script


def _server(db: str, kb: str, script: Path, workers: int = 1):
    # Without keys, as a local user runs it (the keys in this shell are not for the bench).
    env = {k: v for k, v in os.environ.items()
           if k not in ("AGENTMODES_API_KEY", "AGENTMODES_CHAT_API_KEY")}
    # It measures capacity: every chat must be admitted, none refused by the per-key rate
    # limit or the run queue (both protect a real server; see the README's Security).
    env.update(AGENTMODES_RATE_CHAT="off", AGENTMODES_RUN_QUEUE="100000")
    return running_server(db, kb=kb, llm=f"scripted:{script}", env=env, workers=workers,
                          startup_timeout=180)


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
                        if _unexpected(event.get("full_response")):
                            errors.append(f"unexpected answer {event.get('full_response')!r}")
                        break
                    if event.get("fatal") or event.get("code"):
                        errors.append(event.get("message", "error event"))
                        break
                ttfe.append((first - sent) * 1000)
                latency.append((time.perf_counter() - sent) * 1000)
    except Exception as err:        # a dropped connection is an error of the run, not a crash
        errors.append(f"{type(err).__name__}: {err}")


def _completed(db: str) -> int:
    """Complete answers stored in the chat database (SQLite file or PostgreSQL URL)."""
    from sqlalchemy import text

    from ..store.engine import make_engine
    engine = make_engine(db)
    try:
        with engine.connect() as conn:
            return conn.execute(text("SELECT COUNT(*) FROM chatbot_messages WHERE role = "
                                     "'assistant' AND status = 'complete'")).scalar_one()
    finally:
        engine.dispose()


def _result(label: str, setup: tuple[str, int], concurrency: int, ttfe: list, latency: list,
            errors: int, persisted: int, wall: float) -> LevelResult:
    def pct(values: list, q: float) -> float:
        return round(float(np.percentile(values, q)), 2) if values else float("nan")
    return LevelResult(label, setup[0], setup[1], concurrency, len(latency), errors, persisted,
                       pct(ttfe, 50), pct(ttfe, 95), pct(latency, 50), pct(latency, 95),
                       round(wall, 3), round(len(latency) / wall, 2) if wall else 0.0)


def _setup_label(database: str, workers: int) -> str:
    name = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}.get(database, database)
    return f"server ({name}, {workers} worker{'s' if workers > 1 else ''})"


def run_level(url: str, db: str, concurrency: int, messages: int,
              setup: tuple[str, int] = ("sqlite", 1)) -> tuple[LevelResult, list]:
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
    label = (f"{_setup_label(*setup)}, {concurrency} concurrent WebSocket "
             f"chat{'s' if concurrency > 1 else ''}")
    return _result(label, setup, concurrency, ttfe, latency, len(errors), persisted,
                   wall), errors


def run_in_process(work: Path, kb: str, messages: int) -> LevelResult:
    """The same questions through AgentChatService directly: the no-transport reference."""
    from ..llm.scripted import ScriptedModel
    from ..service import AgentChatService
    from ..store.chat import ChatStore
    service = AgentChatService(ChatStore.open(str(work / "inproc.db")),
                               data_dir=work / "inproc", run_jobs=False,
                               llm_factory=lambda: ScriptedModel(SCRIPT))
    service.ensure_chatbot("default", kb_path=str(kb))
    ttfe, latency, errors = [], [], 0
    warm = service.ask("default", "Aufwärmen: Wann hat die DG Agentur geöffnet?")
    errors += _unexpected(warm.content)
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
                errors += _unexpected(event.get("full_response"))
        ttfe.append((first - sent) * 1000)
        latency.append((time.perf_counter() - sent) * 1000)
    wall = time.perf_counter() - started
    persisted = _completed(str(work / "inproc.db")) - 1     # without the warm-up
    service.close()
    return _result("in-process AgentChatService (no HTTP), sequential", ("in-process", 1), 1,
                   ttfe, latency, errors, persisted, wall)


def run_server_load(levels: list[int], messages: int, out_dir: Path, progress=None, *,
                    db: str | None = None, workers: list[int] | None = None) -> dict:
    """Every setup (SQLite, and PostgreSQL at `db` if given) x worker count x level."""
    workers = workers or [1]
    with tempfile.TemporaryDirectory(prefix="agentmodes-bench-server-") as tmp:
        work = Path(tmp)
        docs, script = _docs(work), _script(work)
        sqlite_kb = _prepare_kb(str(work / "kb.db"), docs)
        rows = [run_in_process(work, sqlite_kb, max(messages * 4, 20))]
        all_errors: list[str] = []
        setups = [("sqlite", str(work / "chat.db"), sqlite_kb)]
        if db:
            from ..store.urls import kb_url
            setups.append(("postgresql", db, _prepare_kb(kb_url(db, "agentmodes_bench"), docs)))
        for database, chat_db, kb in setups:
            for count in workers:
                if progress:
                    progress(f"{_setup_label(database, count)}: starting")
                with _server(chat_db, kb, script, count) as url:
                    # Warm-up (imports, the KB's index, database pages, every worker): not
                    # measured, but checked for errors like any other chat.
                    _, errors = run_level(url, chat_db, 2 * count, 2, (database, count))
                    all_errors.extend(errors[:5])
                    for level in levels:
                        if progress:
                            progress(f"{_setup_label(database, count)}: {level} concurrent "
                                     f"chats x {messages} messages")
                        row, errors = run_level(url, chat_db, level, messages,
                                                (database, count))
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
    """Throughput against SQLite with 1 worker at the same level, and against in-process."""
    rows = report["rows"]
    inproc = rows[0]
    reference = {r["concurrency"]: r for r in rows
                 if r["database"] == "sqlite" and r["workers"] == 1}

    def ratio(value: float, base: dict | None) -> float | None:
        return round(value / base["messages_per_s"], 2) if base and base["messages_per_s"] \
            else None
    return [{**r, "throughput_vs_sqlite_1_worker": ratio(r["messages_per_s"],
                                                         reference.get(r["concurrency"])),
             "throughput_vs_in_process": ratio(r["messages_per_s"], inproc)} for r in rows]


def markdown(report: dict) -> str:
    head = ("| setup | messages | errors | persisted | TTFE p50 ms | TTFE p95 ms | latency p50 ms "
            "| latency p95 ms | msgs/s | x vs SQLite 1 worker | x vs in-process |")
    lines = [f"# Server load ({report['llm']}, {report['messages_per_chat']} messages per chat, "
             f"{report['cpu_count']} CPUs, load average {report.get('load_avg_1m_after')} "
             "after the run)", "", head, "|" + "---|" * 11]
    for r in _ratios(report):
        def shown(value):
            return "-" if value is None else value
        lines.append(f"| {r['label']} | {r['messages']} | {r['errors']} | {r['persisted']} "
                     f"| {r['ttfe_p50_ms']} | {r['ttfe_p95_ms']} | {r['latency_p50_ms']} "
                     f"| {r['latency_p95_ms']} | {r['messages_per_s']} "
                     f"| {shown(r['throughput_vs_sqlite_1_worker'])} "
                     f"| {shown(r['throughput_vs_in_process'])} |")
    lines += ["", "TTFE: time from sending a question to its first event. Persisted: assistant "
              "messages stored with status `complete` during that level. x vs SQLite 1 worker: "
              "throughput against SQLite with one worker at the same number of chats."]
    return "\n".join(lines) + "\n"


def write_report(report: dict, out_dir: Path) -> tuple[Path, Path]:
    report = {**report, "rows": _ratios(report)}
    return write_results(out_dir, "server_load", report, markdown(report))


def parse_levels(text: str, option: str = "--levels") -> list[int]:
    from ..errors import ConfigError
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"{option} takes whole numbers separated by commas, not {text!r}") \
            from None
    if not levels or min(levels) < 1:
        raise ConfigError(f"{option} needs at least one number of 1 or more")
    return levels

