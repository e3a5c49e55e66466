"""Guess whether a query is German, English or Chinese, to pick the prompt language.

Chinese is recognised by its script: Han characters outweigh the Latin words (a Chinese
question that names `python` or a product is still Chinese), unless kana show it to be
Japanese, which has no prompts and gets the default. German and English are told apart by a
stopword count with an umlaut/ß bonus, enough for the short questions users ask; a
language-ID model would add a dependency and startup time for no gain on this task.
"""

from __future__ import annotations

import re

_WORD_RE = re.compile(r"[a-zäöüß]+")
_HAN_RE = re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff]")
_KANA_RE = re.compile(r"[\u3040-\u30ff]")
_GERMAN = frozenset(
    "der die das und ist ich nicht ein eine einen dem den des zu mit wie was wann wo wer "
    "warum welche welcher welches hat haben sind wir ihr sie es auf für von im bei auch "
    "oder kann können gibt mir mich uns euch noch nach über unter zum zur am vom sich "
    "dass aber wenn bitte geöffnet öffnungszeiten erreiche".split())
_ENGLISH = frozenset(
    "the and is are was were what when where who why which how do does did can could "
    "you your i me my we our it its of to in on for with at by from about this that "
    "there have has please tell open opening hours reach".split())


def detect_language(text: str, default: str = "en") -> str:
    """Return "zh", "de" or "en"; `default` when the text gives no evidence either way."""
    lowered = text.lower()
    words = _WORD_RE.findall(lowered)
    han = len(_HAN_RE.findall(text))
    if han >= 2 and han >= len(words) and not _KANA_RE.search(text):
        return "zh"
    de = sum(w in _GERMAN for w in words) + 2 * sum(c in "äöüß" for c in lowered)
    en = sum(w in _ENGLISH for w in words)
    if de == en:
        return default
    return "de" if de > en else "en"
