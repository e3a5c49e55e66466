"""The Reflection loop's memory (seed 001, "记忆管理").

Records of executions (attempts) and reflections (reviewer feedback, or Reflexion's verbal
lessons), in order. `get_trajectory` renders them as text that goes straight into a prompt,
so the reviewer and the refiner see the whole history; `get_last_execution` finds the
attempt the next refinement starts from. The seed's typos ("excution") are not kept: the
record types are "execution" and "reflection" (plus "evaluation" for test results, which
the reviewer should see next to the attempt they belong to).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

RECORD_TYPES = ("execution", "reflection", "evaluation")

_LABELS = {
    "en": {"execution": "--- Previous attempt ---", "reflection": "--- Reviewer feedback ---",
           "evaluation": "--- Test results ---"},
    "de": {"execution": "--- Vorheriger Versuch ---", "reflection": "--- Rückmeldung des Prüfers ---",
           "evaluation": "--- Testergebnisse ---"},
    # seed 001/004's own labels ("--- 上一轮尝试 ---", "--- 评审员反馈 ---")
    "zh": {"execution": "--- 上一轮尝试 ---", "reflection": "--- 评审员反馈 ---",
           "evaluation": "--- 测试结果 ---"},
}


@dataclass(slots=True)
class Record:
    type: str
    content: str
    meta: dict[str, Any] = field(default_factory=dict)


class Memory:
    """Ordered records of one task's attempts and the feedback on them."""

    def __init__(self, language: str = "en"):
        self.records: list[Record] = []
        self.labels = _LABELS.get(language, _LABELS["en"])

    def add_record(self, record_type: str, content: str, **meta: Any) -> Record:
        if record_type not in RECORD_TYPES:
            raise ValueError(f"unknown memory record type {record_type!r}; use one of {RECORD_TYPES}")
        record = Record(record_type, content, dict(meta))
        self.records.append(record)
        return record

    def get_trajectory(self, last: Optional[int] = None, *, before: Optional[int] = None) -> str:
        """The records as prompt text, each under its label: all of them, or the last `last`
        of those before index `before` (e.g. the rounds preceding the attempt under review)."""
        records = self.records if before is None else self.records[:before]
        if last is not None:
            records = records[-last:] if last > 0 else []
        return "\n\n".join(f"{self.labels[r.type]}\n{r.content.strip()}" for r in records)

    def get_last_execution(self) -> Optional[str]:
        return self._last("execution")

    def get_last_reflection(self) -> Optional[str]:
        return self._last("reflection")

    def executions(self) -> list[str]:
        return [r.content for r in self.records if r.type == "execution"]

    def _last(self, record_type: str) -> Optional[str]:
        for record in reversed(self.records):
            if record.type == record_type:
                return record.content
        return None

    def __len__(self) -> int:
        return len(self.records)

    def as_list(self) -> list[dict[str, Any]]:
        return [{"type": r.type, "content": r.content, **r.meta} for r in self.records]
