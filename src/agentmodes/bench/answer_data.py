"""QA sets with gold answers and gold passages for `bench answers`, and their knowledge bases.

- xquad-en: XQuAD English (240 paragraphs, 1,190 questions); the gold passage is the
  paragraph the question was written on, the gold answers are SQuAD's answer spans.
- hotpotqa: the Reflexion paper's 100-question distractor sample; the knowledge base is the
  pooled context paragraphs (1,000, by title), the gold passages are the two supporting
  paragraphs, the gold answer HotpotQA's.

Each passage becomes a Markdown file named by its id (its title as the heading) in a cache
folder, ingested once into a KB that later runs reuse; the file name is how a cited source
is traced back to its passage.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from .beir import load_dataset
from .codedata import DataError, data_root
from .runs import PROJECT_ROOT, slug

DATASETS = ("xquad-en", "hotpotqa")
SPLITS = ("bench", "calibration")
# `bench answers --limit 240` on XQuAD-en is the reported sample; the composer's thresholds,
# weights and lead margin are fitted on questions outside it (bench/compose_calibration.py)
BENCH_SAMPLE = 240
CACHE_DIR = PROJECT_ROOT / ".cache" / "answers"


@dataclass(frozen=True, slots=True)
class QA:
    id: str
    question: str
    answers: tuple[str, ...]
    gold: frozenset              # passage ids
    dataset: str


@dataclass(slots=True)
class QASet:
    name: str
    passages: dict[str, tuple[str, str]]          # id -> (title, text)
    questions: list[QA]

    def sample(self, limit: Optional[int], *, exclude: Sequence[str] = ()) -> list[QA]:
        """`limit` questions spread evenly over the set (XQuAD's questions come grouped by
        article: the first 200 would be four topics), deterministic; `exclude` ids left out."""
        excluded = set(exclude)
        pool = [q for q in self.questions if q.id not in excluded]
        if not limit or limit >= len(pool):
            return pool
        step = len(pool) / limit
        return [pool[int(i * step)] for i in range(limit)]

    def split(self, name: str, limit: Optional[int]) -> list[QA]:
        """"bench": the reported sample (`limit` questions spread over the set);
        "calibration": `limit` questions spread over the rest once the BENCH_SAMPLE-question
        bench sample is left out, for tuning the composer without scoring what was tuned."""
        if name == "bench":
            return self.sample(limit)
        if name == "calibration":
            return self.sample(limit, exclude={q.id for q in self.sample(BENCH_SAMPLE)})
        raise DataError(f"unknown split {name!r} (use {', '.join(SPLITS)})")


def load_qa(name: str, data_dir: Any = None) -> QASet:
    if name == "xquad-en":
        return _xquad(data_dir)
    if name == "hotpotqa":
        return _hotpot(data_dir)
    raise DataError(f"unknown QA set {name!r} (use {', '.join(DATASETS)})")


def _xquad(data_dir: Any) -> QASet:
    beir = load_dataset("xquad-en", data_dir)
    path = data_root(data_dir) / "xquad-en" / "beir" / "queries.jsonl"
    answers: dict[str, tuple[str, ...]] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                answers[str(row["_id"])] = tuple((row.get("metadata") or {}).get("answers") or ())
    passages = {d: (t, x) for d, t, x in zip(beir.doc_ids, beir.titles, beir.texts)}
    questions = [QA(q, text, answers.get(q, ()), frozenset(beir.qrels.get(q, {})), "xquad-en")
                 for q, text in zip(beir.query_ids, beir.queries) if answers.get(q)]
    return QASet("xquad-en", passages, questions)


def _hotpot(data_dir: Any) -> QASet:
    from .hotpotqa import load_questions, pooled_paragraphs

    rows = load_questions(data_dir)
    path = data_root(data_dir) / "hotpotqa" / "hotpot-qa-distractor-sample.jsonl"
    support: dict[str, frozenset] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                facts = row.get("supporting_facts") or {}
                titles = facts.get("title") if isinstance(facts, dict) else [f[0] for f in facts]
                support[row["id"]] = frozenset(titles or ())
    passages = {title: (title, text) for title, text in pooled_paragraphs(rows).items()}
    questions = [QA(q.id, q.question, (q.answer,), support.get(q.id, frozenset()), "hotpotqa")
                 for q in rows]
    return QASet("hotpotqa", passages, questions)


def file_stem(passage_id: str) -> str:
    digest = hashlib.sha1(passage_id.encode("utf-8")).hexdigest()[:8]
    return f"{slug(passage_id)[:60]}-{digest}"


def build_kb(qa: QASet, cache_dir: Path = CACHE_DIR) -> tuple[Path, dict[str, str]]:
    """The set's KB file (built once, reused) and the map file stem -> passage id."""
    from ..knowledge.base import KnowledgeBase

    digest = hashlib.sha256("\x00".join(sorted(qa.passages)).encode("utf-8")).hexdigest()[:12]
    docs = cache_dir / f"{qa.name}-{digest}"
    docs.mkdir(parents=True, exist_ok=True)
    stems = {}
    for pid, (title, text) in qa.passages.items():
        stem = file_stem(pid)
        stems[stem] = pid
        path = docs / f"{stem}.md"
        content = f"# {title}\n\n{text}\n"
        if not path.is_file() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
    kb_path = cache_dir / f"{qa.name}-{digest}.db"
    with KnowledgeBase.open(kb_path) as kb:
        kb.ingest(docs)
    return kb_path, stems


def passage_of(source: str, stems: dict[str, str]) -> Optional[str]:
    """The passage id of a cited source (its file path)."""
    return stems.get(Path(source).stem)
