"""Language-aware text analysis for the lexical index (German and English).

A text becomes a list of index terms: case folding, stop-word removal, Snowball stemming
(PyStemmer) in the text's language, then diacritics folding, so "Öffnungszeiten",
"öffnungszeit" and "Offnungszeit" all meet at the term "offnungszeit". Folding comes after
stemming because the German stemmer uses the umlauts to find suffixes.

Language detection is deliberately small: counts of frequent function words plus German
letters (ä ö ü ß). It only has to pick between two stemmers for a chunk or a query; a query
with no evidence either way (e.g. a bare noun) falls back to the corpus's majority language.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Literal

import Stemmer

Language = Literal["en", "de"]
LanguageSetting = Literal["en", "de", "auto"]
LANGUAGES: tuple[Language, ...] = ("en", "de")
_STEMMER_NAMES = {"en": "english", "de": "german"}

# Same token shape as bm25s's default (two or more word characters), so that our index and
# the bm25s baseline differ only where we mean them to.
_TOKEN = re.compile(r"\w{2,}")  # = bm25s's (?u)\b\w\w+\b on maximal word runs, 20% faster
_WORD = re.compile(r"(?u)\w+")



def _bm25s_stopwords() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """bm25s's English and German stop word lists (the ones our baseline uses), read from its
    data module without importing the bm25s package: its __init__ pulls in its benchmark
    utilities, half a second of every cold start (a KB's first search must stay < 1 s)."""
    spec = importlib.util.find_spec("bm25s")
    path = Path(list(spec.submodule_search_locations)[0]) / "stopwords.py"
    data = importlib.util.spec_from_file_location("_agentmodes_bm25s_stopwords", path)
    module = importlib.util.module_from_spec(data)
    data.loader.exec_module(module)
    return module.STOPWORDS_EN, module.STOPWORDS_GERMAN


_EN, _DE = _bm25s_stopwords()
STOPWORDS: dict[Language, frozenset[str]] = {"en": frozenset(_EN), "de": frozenset(_DE)}

# Function words that are frequent in one language and rare in the other ("in", "so",
# "was", "an" are left out on purpose: they occur in both).
_MARKERS: dict[Language, frozenset[str]] = {
    "en": frozenset("the and of to is are that what which who whom how when where with for "
                    "this from by it be were has have had not or on at as their its can "
                    "does did".split()),
    "de": frozenset("der die das und ist sind nicht ein eine einen einem mit von zu den dem "
                    "des für auf wie wann wo wer welche welcher welches ich sie es im auch "
                    "bei oder noch nach über wird werden kann hat haben zum zur".split()),
}


def fold_diacritics(text: str) -> str:
    """Strip combining marks: "Öffnung" -> "Offnung", "café" -> "cafe"."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def detect_language(text: str) -> Language | None:
    """"de" or "en" when the text gives evidence, else None."""
    return _decide(_WORD.findall(text.casefold()), text)


def _decide(words: list[str], text: str) -> Language | None:
    # map(frozenset.__contains__) counts in C; three generator sums per token were the
    # hot spot of analysing 100k chunks.
    en = sum(map(_MARKERS["en"].__contains__, words))
    de = sum(map(_MARKERS["de"].__contains__, words))
    if not text.isascii():
        lowered = text.lower()  # not casefold: that turns ß into ss
        de += 2 * sum(map(lowered.count, "äöüß"))
    if de == en:
        return None
    return "de" if de > en else "en"


def term_key(term: str) -> int:
    """A stable signed 64-bit key for an index term (the lexical index stores keys, not
    strings: no vocabulary to load on open, and a query term is found by binary search).
    0 is reserved for "no term" (a stop word), so a hash of 0 becomes 1."""
    key = int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest(),
                         "little", signed=True)
    return key or 1


@lru_cache(maxsize=4)
def _stemmer(language: Language) -> Stemmer.Stemmer:
    return Stemmer.Stemmer(_STEMMER_NAMES[language])


class Analyzer:
    """Turns texts into index terms.

    `language` is "en", "de" or "auto"; with "auto" each text is analysed in its detected
    language and `fallback` is used when detection finds no evidence. Stemmed forms are
    memoised per language (word lists of real corpora repeat heavily, and the cache is what
    makes analysis of 100k chunks take seconds rather than minutes).
    """

    def __init__(self, language: LanguageSetting = "auto", fallback: Language = "en",
                 stopwords: bool = True) -> None:
        if language not in ("en", "de", "auto"):
            raise ValueError(f"unknown language {language!r}: use en, de or auto")
        self.language = language
        self.fallback = fallback
        self.use_stopwords = stopwords
        self._memo: dict[Language, dict[str, str]] = {lang: {} for lang in LANGUAGES}
        self._keys: dict[Language, dict[str, int]] = {lang: {} for lang in LANGUAGES}

    def language_of(self, text: str) -> Language:
        if self.language != "auto":
            return self.language
        return detect_language(text) or self.fallback

    def terms(self, text: str, language: Language | None = None) -> list[str]:
        """Index terms of one text, in order, stop words removed."""
        return self.analyse(text, language)[1]

    def analyse(self, text: str, language: Language | None = None,
                fallback: Language | None = None) -> tuple[Language, list[str]]:
        """(language, terms) with one tokenisation pass for both."""
        words = _TOKEN.findall(text.casefold())
        lang = self._language(words, text, language, fallback)
        return lang, list(filter(None, self._lookup(self._memo[lang], lang, words)))

    def analyse_keys(self, text: str, language: Language | None = None,
                     fallback: Language | None = None) -> tuple[Language, list[int]]:
        """(language, term keys): `analyse` with each term as its term_key, the form the
        lexical index stores. This is the hot loop of indexing (one call per chunk), hence
        the shape: one regex pass, language evidence counted on those tokens, then memo
        look-ups with map() in C, stemming and hashing only words never seen before."""
        words = _TOKEN.findall(text.casefold())
        lang = self._language(words, text, language, fallback)
        return lang, list(filter(None, self._lookup(self._keys[lang], lang, words)))

    def _language(self, words: list[str], text: str, language: Language | None,
                  fallback: Language | None) -> Language:
        if language:
            return language
        if self.language != "auto":
            return self.language
        return _decide(words, text) or fallback or self.fallback

    def _lookup(self, memo: dict, lang: Language, words: list[str]) -> list:
        found = list(map(memo.get, words))
        if None not in found:
            return found
        # Some words are new (in real corpora nearly every chunk has one: an id, a code):
        # a set difference finds them in C, and only their places are filled in afterwards.
        self._learn(lang, list(set(words).difference(memo)))
        return [memo[w] if v is None else v for w, v in zip(words, found)]

    def _learn(self, lang: Language, new: list[str]) -> None:
        """Stem (and key) the given unseen words; only they are visited, not the whole text."""
        memo, keys = self._memo[lang], self._keys[lang]
        stop = STOPWORDS[lang] if self.use_stopwords else frozenset()
        for word, stem in zip(new, _stemmer(lang).stemWords(new)):
            term = "" if word in stop else fold_diacritics(stem)
            memo[word] = term
            keys[word] = term_key(term) if term else 0

    def terms_many(self, texts: list[str]) -> list[list[str]]:
        return [self.terms(text) for text in texts]
