"""End to end on real data with the real default embedder (slow: embeds 200 paragraphs).

HotpotQA questions need two supporting paragraphs; we ingest them as Markdown files among
distractors and check that the KB (files -> chunks -> SQLite -> index) finds them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentmodes.knowledge.base import KnowledgeBase
from data_support import data_file, needs_data

DATA = data_file("hotpotqa/beir") or Path("missing")
QUESTIONS = 20
DOCUMENTS = 200

pytestmark = [pytest.mark.slow, needs_data("hotpotqa/beir")]


def _load() -> tuple[dict[str, dict], list[tuple[str, set[str]]]]:
    corpus = {d["_id"]: d for d in map(json.loads, (DATA / "corpus.jsonl").open(encoding="utf-8"))}
    queries = {q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open(encoding="utf-8"))}
    relevant: dict[str, set[str]] = {}
    for line in (DATA / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, _ = line.split("\t")
        relevant.setdefault(qid, set()).add(doc)
    picked = list(relevant)[:QUESTIONS]
    return corpus, [(queries[q], relevant[q]) for q in picked]


def test_kb_finds_supporting_paragraphs_in_every_mode(tmp_path):
    corpus, questions = _load()
    wanted = set().union(*(docs for _, docs in questions))
    chosen = list(wanted) + [d for d in corpus if d not in wanted][:DOCUMENTS - len(wanted)]
    folder = tmp_path / "docs"
    folder.mkdir()
    for n, doc_id in enumerate(chosen):
        doc = corpus[doc_id]
        name = f"{n:03}-{re.sub(r'[^A-Za-z0-9]+', '-', doc_id)[:40]}.md"
        (folder / name).write_text(f"# {doc['title']}\n\n{doc['text']}\n", encoding="utf-8")

    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        report = kb.ingest(folder)
        assert len(report.added) == DOCUMENTS and report.pending_embeddings == 0
        recall = {}
        for mode in ("lexical", "semantic", "hybrid"):
            found = 0
            for question, docs in questions:
                titles = {h.title for h in kb.search(question, mode=mode, k=5)}
                found += len(titles & {corpus[d]["title"] for d in docs})
            recall[mode] = found / sum(len(docs) for _, docs in questions)
        print("recall@5", recall)
        assert recall["lexical"] >= 0.75 and recall["semantic"] >= 0.75
        assert recall["hybrid"] >= max(recall["lexical"], recall["semantic"]) - 0.05
