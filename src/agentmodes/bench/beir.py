"""Load a BEIR-layout retrieval set (corpus.jsonl, queries.jsonl, qrels/test.tsv).

The shared data lives outside the project (../shared/data); benchmarks read it in place.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import AgentModesError
from .codedata import data_root

DATASETS = ("hotpotqa", "cranfield", "xquad-en")


@dataclass
class BeirSet:
    name: str
    doc_ids: list[str]
    titles: list[str]
    texts: list[str]
    query_ids: list[str]
    queries: list[str]
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)  # query -> doc -> grade
    # Documents judged with grade 0 (query -> docs). Left out of qrels, so the retrieval
    # metrics count them as not relevant; on Cranfield this is the question's source paper
    # (see bench/calibration.py, which counts it as relevant).
    zero_graded: dict[str, set[str]] = field(default_factory=dict)

    def passages(self) -> list[str]:
        """Title and text as one passage, the way a chunk with a heading is indexed.

        Titles carry much of the signal on HotpotQA (the gold paragraphs are named by
        title); Cranfield's text already starts with its title, so it is not repeated.
        """
        return [text if not title or text.startswith(title) else f"{title}\n{text}"
                for title, text in zip(self.titles, self.texts)]

    def limited(self, limit: int | None) -> "BeirSet":
        """The first `limit` queries with relevance judgements (the corpus stays whole)."""
        if not limit:
            return self
        keep = [i for i, q in enumerate(self.query_ids) if self.qrels.get(q)][:limit]
        return BeirSet(self.name, self.doc_ids, self.titles, self.texts,
                       [self.query_ids[i] for i in keep], [self.queries[i] for i in keep],
                       {self.query_ids[i]: self.qrels[self.query_ids[i]] for i in keep},
                       self.zero_graded)


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_beir(folder: Path | str, name: str | None = None) -> BeirSet:
    folder = Path(folder)
    corpus_path, queries_path = folder / "corpus.jsonl", folder / "queries.jsonl"
    qrels_path = folder / "qrels" / "test.tsv"
    for path in (corpus_path, queries_path, qrels_path):
        if not path.is_file():
            raise AgentModesError(f"not a BEIR folder: {path} is missing")
    corpus = _read_jsonl(corpus_path)
    qrels: dict[str, dict[str, int]] = {}
    zero_graded: dict[str, set[str]] = {}
    with qrels_path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            grade = int(float(row["score"]))
            if grade > 0:
                qrels.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = grade
            elif grade == 0:
                zero_graded.setdefault(str(row["query-id"]), set()).add(str(row["corpus-id"]))
    queries = [q for q in _read_jsonl(queries_path) if str(q["_id"]) in qrels]
    return BeirSet(
        name=name or folder.parent.name,
        doc_ids=[str(d["_id"]) for d in corpus],
        titles=[d.get("title") or "" for d in corpus],
        texts=[d.get("text") or "" for d in corpus],
        query_ids=[str(q["_id"]) for q in queries],
        queries=[q["text"] for q in queries],
        qrels=qrels,
        zero_graded=zero_graded,
    )


def load_dataset(name: str, data_dir: Path | str | None = None) -> BeirSet:
    """A set by name from --data, $AGENTMODES_DATA or ../shared/data (see codedata.data_root)."""
    return load_beir(data_root(data_dir) / name / "beir", name)
