"""The questions to compare the modes on, and their gold answers, as users write them.

QUESTIONS is plain text (one question per line) or JSON Lines (one object per line with
"question" and optionally "id" and "answer"/"answers": then it brings its own gold), read
from a file or from stdin. GOLD (`--answers`) is JSON Lines ("answer"/"answers" with the
"id" or "question" it belongs to), a JSON object {question: answer(s)}, or plain text with
one answer per line in the questions' order. Anything else is a one-line error naming the
file and line (a ConfigError: a usage error, exit 2).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import ConfigError

MAX_QUESTION_CHARS = 20_000       # as the server's chat requests
_ROW_KEYS = {"answer", "answers", "id", "question"}


@dataclass(frozen=True, slots=True)
class Question:
    index: int                    # 1-based, in input order
    id: str
    question: str
    answers: tuple[str, ...] = ()   # gold answers; empty: none known


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def _looks_like_json_lines(lines: Sequence[str]) -> bool:
    first = next((line.strip() for line in lines if line.strip()), "")
    return first.startswith("{")


def _answers_of(row: dict, where: str) -> tuple[str, ...]:
    value = row.get("answers", row.get("answer"))
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise ConfigError(f"{where}: \"answer(s)\" must be a string or a list of strings")
    return tuple(str(v).strip() for v in value if str(v).strip())


def _json_line(line: str, where: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{where}: not a JSON object ({err.msg}); write one question per "
                          "line as plain text, or one JSON object per line") from None


def parse_questions(text: str, name: str) -> list[Question]:
    """The questions of a QUESTIONS file's text (`name` is how errors refer to it)."""
    lines = text.splitlines()
    out: list[Question] = []
    json_lines = _looks_like_json_lines(lines)
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{name} line {n}"
        qid, answers = "", ()
        if json_lines:
            row = _json_line(line, where)
            if isinstance(row, str):
                row = {"question": row}
            if not isinstance(row, dict):
                raise ConfigError(f"{where}: expected a JSON object with \"question\"")
            question = row.get("question", row.get("query"))
            if not isinstance(question, str) or not question.strip():
                raise ConfigError(f"{where}: no \"question\" (a non-empty string)")
            qid = str(row.get("id") or row.get("_id") or "")
            answers = _answers_of(row, where)
        else:
            question = line
        question = question.strip()
        if len(question) > MAX_QUESTION_CHARS:
            raise ConfigError(f"{where}: the question is longer than {MAX_QUESTION_CHARS} "
                              "characters")
        index = len(out) + 1
        out.append(Question(index, qid or f"q{index}", question, answers))
    if not out:
        raise ConfigError(f"{name} holds no questions (one per line, or JSON Lines with "
                          "\"question\")")
    ids = [q.id for q in out]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ConfigError(f"{name}: the id {dup!r} is used by more than one question")
    return out


def parse_gold(text: str, name: str, questions: Sequence[Question]) -> list[Question]:
    """The questions with the gold answers of a GOLD file (replacing any they brought)."""
    stripped = text.strip()
    if not stripped:
        raise ConfigError(f"{name} holds no answers")
    table = _whole_json(stripped)
    if isinstance(table, dict) and not _ROW_KEYS & table.keys():     # {question: answer(s)}
        gold = {_key(q): _answers_of({"answers": a}, f"{name}, {q!r}") for q, a in table.items()}
        return _matched(questions, gold, {}, name)
    lines = text.splitlines()
    if _looks_like_json_lines(lines):
        by_id: dict[str, tuple[str, ...]] = {}
        by_question: dict[str, tuple[str, ...]] = {}
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{name} line {n}"
            row = _json_line(line, where)
            if not isinstance(row, dict):
                raise ConfigError(f"{where}: expected a JSON object with \"answer\"")
            answers = _answers_of(row, where)
            if not answers:
                raise ConfigError(f"{where}: no \"answer\" or \"answers\"")
            if row.get("id") is not None:
                by_id[str(row["id"])] = answers
            elif isinstance(row.get("question"), str):
                by_question[_key(row["question"])] = answers
            else:
                raise ConfigError(f"{where}: say which question it answers (\"id\" or "
                                  "\"question\")")
        return _matched(questions, by_question, by_id, name)
    answers = [line.strip() for line in lines if line.strip()]
    if len(answers) != len(questions):
        raise ConfigError(f"{name} has {len(answers)} answer lines for {len(questions)} "
                          "questions; plain-text answers go one per line in the questions' "
                          "order (or use JSON Lines with \"id\"/\"question\")")
    return [Question(q.index, q.id, q.question, (a,)) for q, a in zip(questions, answers)]


def _whole_json(text: str) -> Any:
    """The text as one JSON value, or None (JSON Lines with several rows is not one)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _matched(questions: Sequence[Question], by_question: dict, by_id: dict,
             name: str) -> list[Question]:
    out = [Question(q.index, q.id, q.question,
                    by_id.get(q.id) or by_question.get(_key(q.question)) or ())
           for q in questions]
    if not any(q.answers for q in out):
        raise ConfigError(f"{name}: none of its answers belongs to a question (match by "
                          "\"id\" or the question's text)")
    return out


def missing_gold(questions: Sequence[Question]) -> list[Question]:
    return [q for q in questions if not q.answers]


def has_gold(questions: Sequence[Question]) -> bool:
    return any(q.answers for q in questions)
