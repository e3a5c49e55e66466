"""`agentmodes bench answers`: the answers a user reads, end to end, on QA sets with gold.

Each question runs through `Agent.run` (the mode's loop, its searches, the model, the
answer composer), and four answers are scored side by side:

- model: the model's own final answer, as it wrote it (done["model_answer"]);
- composed: what the user reads (done["full_response"], modes/compose.py);
- extractive: the composer with nothing from the model (its sentence ranking alone) over
  the same gathered sources;
- bm25-sentence: no agent at all: plain bm25s over every sentence of the corpus, the top
  sentence with its passage cited.

Scores: the share with a gold answer in the first 300 characters, the share that cites a
gold passage, both at once, exact match and F1 of the first sentence (SQuAD/HotpotQA
normalisation), answer length (characters before the sources), tokens and time. Runs are
resumable (one JSON line per question under <out>/runs/answers/; `--shard K/N` lets N
processes share one run, each taking every N-th question); `--recompose` scores
logged runs with the current composer instead of the one that ran (the model's answers,
tokens and time are the logged ones).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional, Sequence

from ..evaluators.text import exact_match, f1_score, normalize_answer, strip_citations
from ..modes.compose import Composer
from ..modes.statements import citations, split_statements
from ..settings import ChatbotSettings
from .answer_data import QA, QASet, build_kb, load_qa, passage_of
from .llm_report import Column, Report, mean, write
from .runs import Job, RunLog, results_dir, resumed_note, run_jobs, slug

VARIANTS = ("model", "composed", "extractive", "bm25-sentence")
LEAD_CHARS = 300


def settings_for(dataset: str, mode: str) -> ChatbotSettings:
    return ChatbotSettings(agent_mode=mode, language="en",
                           task_type="multihop" if dataset == "hotpotqa" else "lookup")


def run_question(q: QA, mode: str, llm: Any, kb: Any, stems: dict[str, str],
                 composer: Composer) -> dict[str, Any]:
    from ..agent import Agent

    agent = Agent(llm=llm, knowledge=kb, settings=settings_for(q.dataset, mode))
    agent.composer = composer                     # one vector cache for the whole run
    result = agent.run(q.question)
    done = result.done
    return {"question": q.question, "answers": list(q.answers), "gold": sorted(q.gold),
            "model_answer": done.get("model_answer", ""), "answer": result.answer,
            "composition": done.get("composition"),
            "sources": [{"n": i, "passage": passage_of(s.source, stems), "title": s.title,
                         "text": s.text, "confidence": round(s.confidence, 4)}
                        for i, s in enumerate(result.sources, start=1)],
            "iterations": result.iterations, "llm_calls": result.usage.calls,
            "prompt_tokens": result.usage.prompt_tokens,
            "completion_tokens": result.usage.completion_tokens,
            "run_s": result.elapsed_s}


# -- scoring ---------------------------------------------------------------------------------
def first_sentence(text: str) -> str:
    for st in split_statements(text or "", "en"):
        if st.kind != "heading" and st.plain:
            return st.plain
    return ""


def score(text: str, cited_passages: set, q_answers: Sequence[str], gold: set) -> dict:
    lead = normalize_answer(strip_citations((text or "")[:LEAD_CHARS]))
    found = any(normalize_answer(a) and f" {normalize_answer(a)} " in f" {lead} "
                for a in q_answers)
    first = first_sentence(text)
    cites = bool(cited_passages & set(gold))
    return {"in_lead": found, "cites_gold": cites, "both": found and cites,
            "em_first": any(exact_match(first, a) for a in q_answers),
            "f1_first": round(max((f1_score(first, a) for a in q_answers), default=0.0), 4),
            "chars": len(text or "")}


def cited_passages(text: str, sources: list[dict]) -> set:
    by_n = {s["n"]: s.get("passage") for s in sources}
    return {by_n.get(n) for n in citations(text or "")} - {None}


class RunComposer:
    """Composes a logged run's answer as its loop did (modes/answering.py): the same
    composer, the run's system prompt and final-answer prompt as the text copied from the
    prompt, the mode's language and "not found" line. The prompt is rebuilt from the
    settings (Agent.prompt), so a log needs no copy of it."""

    def __init__(self, composer: Composer, kb: Any, dataset: str,
                 stems: Optional[dict[str, str]] = None):
        self.composer, self.kb, self.dataset, self.stems = composer, kb, dataset, stems or {}
        self.search_k = getattr(settings_for(dataset, "reflact"), "search_k", 5)
        self._prompts: dict[tuple[str, str], tuple[str, tuple[str, str]]] = {}

    def compose(self, model_text: str, question: str, mode: str, sources: Sequence[Any]):
        from .. import prompts
        from ..agent import Agent

        lang = prompts.choose_language(settings_for(self.dataset, mode), question)
        key = (mode, lang)
        if key not in self._prompts:
            _, lang, _, system = Agent(knowledge=self.kb,
                                       settings=settings_for(self.dataset, mode)).prompt(question)
            self._prompts[key] = (lang, (system, prompts.load("final_answer", lang)))
        lang, prompt_texts = self._prompts[key]
        not_found = prompts.fill(prompts.load("not_found", lang), QUESTION=question)
        sources = list(sources)
        composition = self.composer.compose(
            model_text, question, sources, lang=lang, prompt_texts=prompt_texts,
            not_found=not_found, more_sources=lambda: self._question_sources(question, sources))
        return composition, sources

    def _question_sources(self, question: str, sources: list[dict]) -> list[dict]:
        """What the loop's answer step adds (AnswerWriter._question_sources): the run's own
        search tool on the user's question, numbered on; appended to `sources` in place."""
        from ..tools.search import rag_search

        if not sources:
            return []
        have = {(s.get("title"), s.get("text")) for s in sources}
        added = []
        for src in rag_search(self.kb, k=self.search_k)(question).sources:
            if (src.title, src.text) not in have:
                have.add((src.title, src.text))
                added.append({"n": len(sources) + len(added) + 1,
                              "passage": passage_of(src.source, self.stems), "title": src.title,
                              "text": src.text, "confidence": round(src.confidence, 4)})
        sources.extend(added)
        return added


def score_record(rec: dict, run_composer: RunComposer, recompose: bool) -> dict[str, dict]:
    """The four variants' scores for one logged question (bm25-sentence is added apart)."""
    sources = rec.get("sources") or []
    gold, answers = set(rec.get("gold") or ()), rec.get("answers") or []
    mode = rec.get("variant", "reflact")
    out = {}
    model = rec.get("model_answer") or ""
    composed, composed_sources = rec.get("answer") or "", sources
    if recompose:
        composition, composed_sources = run_composer.compose(model, rec["question"], mode,
                                                             sources)
        composed = composition.text
    started = time.perf_counter()
    composition, extracted_sources = run_composer.compose("", rec["question"], mode, sources)
    extractive = composition.text
    extract_s = time.perf_counter() - started
    for name, text, numbered in (("model", model, sources),
                                 ("composed", composed, composed_sources),
                                 ("extractive", extractive, extracted_sources)):
        out[name] = {**score(text, cited_passages(text, numbered), answers, gold), "text": text}
    out["extractive"]["compose_s"] = round(extract_s, 4)
    return out


class SentenceBaseline:
    """Plain bm25s (its own tokenizer, English stop words) over every corpus sentence."""

    def __init__(self, qa: QASet):
        import bm25s

        self.rows: list[tuple[str, str]] = []
        for pid, (_, text) in qa.passages.items():
            for st in split_statements(text, "en"):
                if st.kind != "heading":
                    self.rows.append((pid, st.plain))
        self.model = bm25s.BM25()
        self.model.index(bm25s.tokenize([t for _, t in self.rows], stopwords="en",
                                        show_progress=False), show_progress=False)

    def answer(self, question: str) -> tuple[str, str]:
        import bm25s

        ids, _ = self.model.retrieve(bm25s.tokenize([question], stopwords="en",
                                                    show_progress=False), k=1,
                                     show_progress=False)
        pid, text = self.rows[int(ids[0][0])]
        return f"{text} [1]", pid


# -- the run ---------------------------------------------------------------------------------
def spread(items: Sequence[Any]) -> list[Any]:
    """`items` in bit-reversed index order, so that the questions a stopped run has done are
    spread over the whole sample (XQuAD's come grouped by article: in order, a run stopped
    at a third would have seen a third of the topics). The report is the same either way."""
    bits = max(1, (len(items) - 1).bit_length())
    key = lambda i: int(f"{i:0{bits}b}"[::-1], 2)
    return [items[i] for i in sorted(range(len(items)), key=key)]


def run_answers(llm: Any, *, llm_label: str, datasets: Sequence[str], modes: Sequence[str],
                limit: Optional[int], data_dir: Any = None, out_dir: Optional[Path] = None,
                recompose: bool = False, show_progress: bool = True,
                shard: tuple[int, int] = (0, 1), fresh: bool = False,
                logged_only: bool = False, split: str = "bench"
                ) -> list[tuple[Report, dict[str, Path]]]:
    from ..knowledge.base import KnowledgeBase

    out_dir = results_dir(out_dir)
    written = []
    for name in datasets:
        qa = load_qa(name, data_dir)
        questions = qa.split(split, limit)
        run_name = name if split == "bench" else f"{name}-{split}"
        kb_path, stems = build_kb(qa)
        with KnowledgeBase.open(kb_path, create=False) as kb:
            composer = Composer(embedder=lambda kb=kb: kb.embedder)
            by_id = {q.id: q for q in questions}
            records = []
            mine = spread([q for i, q in enumerate(questions) if i % shard[1] == shard[0]])
            for mode in modes:
                log = RunLog(out_dir / "runs" / "answers" / f"{run_name}_{mode}_{slug(llm_label)}.jsonl",
                             fresh=fresh and shard[0] == 0)
                if logged_only:             # score what the log has, run nothing
                    done = log.done()
                    records += [done[j.key] for j in (Job(q.id, mode) for q in mine)
                                if j.key in done]
                    continue
                records += run_jobs(
                    [Job(q.id, mode) for q in mine],
                    lambda job: run_question(by_id[job.task_id], job.variant, llm, kb, stems,
                                             composer),
                    log, description=f"answers {name} {mode} ({llm_label})",
                    show_progress=show_progress)
            if shard[1] > 1:                # a part of the run: the full report comes from a
                continue                    # run without --shard once every part is logged
            if logged_only:
                ids = {r["task_id"] for r in records}
                questions = [q for q in questions if q.id in ids]
            report = summarize(name, qa, questions, records, modes,
                               RunComposer(composer, kb, name, stems), recompose)
            if logged_only:
                report.meta["sample"] = (f"{len(questions)} of the {limit or len(qa.questions)}"
                                         "-question sample finished so far (--logged-only)")
        report.meta.update({"llm": llm_label, "recomposed": recompose, "split": split,
                            "resumed": resumed_note(records)})
        stem = f"answers_{run_name}_{slug(llm_label)}" + (f"_limit{limit}" if limit else "")
        paths = write(report, out_dir, stem)
        written.append((report, paths))
    return written


COLUMNS = [Column("both", "gold in 300 chars + gold cited"), Column("in_lead", "gold in 300 chars"),
           Column("cites_gold", "cites gold passage"), Column("em_first", "EM 1st sentence"),
           Column("f1_first", "F1 1st sentence"), Column("chars_mean", "chars (mean)", "{:.0f}"),
           Column("chars_max", "chars (max)", "{}"), Column("over_600", "> 600 chars", "{}"),
           Column("tokens_per_task", "tokens/q", "{:.0f}"),
           Column("time_per_task_s", "time/q (s)", "{:.2f}"), Column("tasks", "questions", "{}"),
           Column("errors", "errors", "{}")]


def summarize(name: str, qa: QASet, questions: list[QA], records: list[dict],
              modes: Sequence[str], run_composer: RunComposer, recompose: bool) -> Report:
    rows, tasks = [], []
    baseline = SentenceBaseline(qa)
    by_id = {q.id: q for q in questions}
    for mode in modes:
        mine = [r for r in records if r.get("variant") == mode]
        ok = [r for r in mine if not r.get("error")]
        scored = [score_record(r, run_composer, recompose) for r in ok]
        tokens = mean([r.get("prompt_tokens", 0) + r.get("completion_tokens", 0) for r in ok])
        run_time = mean([r.get("run_s", r.get("time_s", 0)) for r in ok])
        for variant in ("model", "composed", "extractive"):
            vals = [s[variant] for s in scored]
            time_q = run_time if variant != "extractive" else mean(
                [s["extractive"]["compose_s"] for s in scored])
            rows.append(_row(f"{mode}: {variant}", vals, len(mine), len(mine) - len(ok),
                             tokens if variant != "extractive" else 0, time_q))
        for r, s in zip(ok, scored):
            tasks.append({"task_id": r["task_id"], "mode": mode, "question": r["question"],
                          "answers": r["answers"], **{f"{v}_answer": s[v]["text"] for v in s},
                          **{f"{v}_both": s[v]["both"] for v in s}})
    started = time.perf_counter()
    base = []
    for q in questions:
        text, pid = baseline.answer(q.question)
        base.append(score(text, {pid}, q.answers, set(q.gold)))
    per_q = (time.perf_counter() - started) / max(1, len(questions))
    rows.append(_row("bm25-sentence (no agent)", base, len(questions), 0, 0, per_q))
    meta = {"dataset": name, "questions": len(questions), "modes": ", ".join(modes),
            "sample": f"{len(questions)} of {len(qa.questions)} questions, evenly spread",
            "knowledge base": f"{len(qa.passages)} passages, one file each",
            "gold in 300 chars": "a gold answer, normalised, within the first 300 characters",
            "first sentence": "the first statement of the answer (modes/statements.py)"}
    return Report(benchmark=f"answers ({name})", metric="both", columns=COLUMNS, rows=rows,
                  meta=meta, tasks=tasks)


def _row(variant: str, vals: list[dict], tasks: int, errors: int, tokens: float,
         time_q: float) -> dict:
    chars = [v["chars"] for v in vals]
    return {"variant": variant,
            **{k: mean([float(bool(v[k])) for v in vals]) for k in
               ("both", "in_lead", "cites_gold", "em_first")},
            "f1_first": mean([v["f1_first"] for v in vals]),
            "chars_mean": mean(chars), "chars_max": max(chars, default=0),
            "over_600": sum(c > 600 for c in chars), "tokens_per_task": tokens,
            "time_per_task_s": round(time_q, 4), "tasks": tasks, "errors": errors}
