"""What kind of answer a question wants, and whether a sentence has that kind of content.

"Wann hat die DG Agentur geöffnet?" wants a time; "wie erreiche ich sie?" wants contacts (a
phone number, an e-mail address, a postal address); "How many points ..." a number. A
question may want several (the README's "Wann ... und wie erreiche ich sie?" wants a time
and contacts). The composer uses this twice: to rank the sentences of the sources for an
extractive answer, and to check that the model's answer contains what was asked before it
is allowed to lead.

Regular expressions over German and English, on purpose: a question-type classifier is a
handful of interrogatives, and evidence for a time, a number or a phone number is a pattern.
"""

from __future__ import annotations

import re
from typing import Iterable

TIME, CONTACT, NUMBER, PERSON, PLACE = "time", "contact", "number", "person", "place"

_QUESTION = {
    TIME: re.compile(
        r"\b(?:when|what (?:year|time|date|day|month|century|decade|period|era)|"
        r"which (?:year|date|day|month|century|decade)|in what (?:year|century|decade)|"
        r"how long ago|opening (?:hours|times)|open(?:ing)?\b(?! source)|hours|"
        r"wann|seit wann|bis wann|um wie viel uhr|in welchem jahr|an welchem tag|"
        r"öffnungszeit\w*|geöffnet|offen|zeiten)\b|什么时候|几点|何时|营业时间|开放时间|哪一年", re.I),
    CONTACT: re.compile(
        r"\b(?:how (?:can|do|could|should) (?:i|we|you|one) (?:reach|contact|call|email|write|"
        r"get in touch)|contact\w*|phone|telephone|e-?mail|address|reach (?:you|them|it)|"
        r"erreich\w*|kontakt\w*|telefon\w*|anrufen|anschrift|adresse|schreiben)\b|联系|电话|邮箱|地址",
        re.I),
    NUMBER: re.compile(
        r"\b(?:how (?:many|much|long|far|old|big|large|tall|high|often)|"
        r"what (?:percentage|percent|proportion|number|amount|size|fraction)|"
        r"wie (?:viele?|lange|weit|alt|groß|hoch|teuer|oft)|was kostet|wieviel\w*|"
        r"kosten|preis\w*|price|cost)\b", re.I),
    PERSON: re.compile(r"(?:^|\b)(?:who|whom|whose|wer|wen|wem|wessen)\b", re.I),
    PLACE: re.compile(r"(?:^|\b)(?:where|wo|woher|wohin|in which (?:city|country|state|"
                      r"region|town)|in welche[mr]? (?:stadt|land))\b", re.I),
}

_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|"
           "december|januar|februar|märz|mai|juni|juli|oktober|dezember")
_DAYS = ("monday|tuesday|wednesday|thursday|friday|saturday|sunday|mondays|saturdays|"
         "sundays|montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag|montags|"
         "samstags|sonntags|werktag\\w*|weekday\\w*|weekend\\w*|wochenende\\w*|feiertag\\w*")
_EVIDENCE = {
    TIME: re.compile(
        r"\b(?:1\d{3}|20\d{2})s?\b|\b\d{1,2}(?::\d{2})?\s*(?:uhr|am|pm|a\.m\.|p\.m\.|h)\b|"
        r"\b\d{1,2}:\d{2}\b|\d{1,2}\s*[点时]|周[一二三四五六日]|星期[一二三四五六日天]|\d+\s*[年月]|"
        r"\b\d{1,2}\s*[-–]\s*\d{1,2}\s*(?:uhr|h)\b|\b(?:mo|di|mi|do|fr|sa|so)\s*[-–]\s*"
        r"(?:mo|di|mi|do|fr|sa|so)\b|\b(?:" + _MONTHS + "|" + _DAYS + r")\b|"
        r"\b(?:century|centuries|decade|jahrhundert\w*|jahrzehnt\w*|bc|ad|v\. chr\.)\b", re.I),
    CONTACT: re.compile(
        r"\+\d[\d \t/()-]{6,}\d|\b0\d{2,5}[ /-]?\d{3,}\b|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|"
        r"\b[\wäöüß-]+(?:straße|strasse|str\.|weg|platz|gasse|allee|ring|damm)\s+\d+\b|"
        r"\b\d{5}\s+[A-ZÄÖÜ][\wäöüß-]+|\b\d+\s+\w+\s+(?:street|road|avenue|lane|st\.|rd\.)\b",
        re.I),
    NUMBER: re.compile(
        r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|"
        r"thirty|forty|fifty|hundred|thousand|million|billion|dozen|half|eins|zwei|drei|vier|"
        r"fünf|sechs|sieben|acht|neun|zehn|elf|zwölf|zwanzig|hundert|tausend|million\w*|"
        r"milliarde\w*|hälfte)\b", re.I),
    PERSON: re.compile(r"(?<![.!?]\s)(?<!^)\b[A-ZÄÖÜ][a-zäöüß]+(?:\s+[A-ZÄÖÜ][a-zäöüß.]+)+"),
    PLACE: re.compile(r"\b(?:in|at|near|im|bei|nach|aus)\s+(?:the\s+)?[A-ZÄÖÜ][\wäöüß-]+"),
}
# Contacts are three kinds; an answer to "how do I reach you" should give each it can.
CONTACT_KINDS = {
    "phone": re.compile(r"\+\d[\d \t/()-]{6,}\d|\b0\d{2,5}[ /-]?\d{3,}\b"),
    "email": re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    "address": re.compile(r"\b[\wäöüß-]+(?:straße|strasse|str\.|weg|platz|gasse|allee)\s+\d+"
                          r"|\b\d{5}\s+[A-ZÄÖÜ][\wäöüß-]+", re.I),
}


def question_types(question: str) -> list[str]:
    """The kinds of answer a question asks for, in the order they are asked."""
    found = []
    for kind, pattern in _QUESTION.items():
        m = pattern.search(question)
        if m:
            found.append((m.start(), kind))
    kinds = [k for _, k in sorted(found)]
    if CONTACT in kinds and PLACE in kinds:        # "where can I reach you" is contact
        kinds.remove(PLACE)
    if TIME in kinds and NUMBER in kinds and re.search(r"how long|wie lange", question, re.I):
        kinds.remove(TIME)                          # a duration is a number
    return kinds


def has_evidence(text: str, kind: str) -> bool:
    return bool(_EVIDENCE[kind].search(text))


def evidence(text: str, kinds: Iterable[str]) -> set[str]:
    """Which of the wanted kinds the text has content for."""
    return {k for k in kinds if _EVIDENCE[k].search(text)}


_DIGITS = re.compile(r"\d[\d.,]*\d|\d")
_VALUE_WORD = re.compile(r"[^\W\d_]{2,}")
_UNITS = {"am", "pm", "uhr", "in", "at", "the", "im", "bei", "nach", "aus", "near"}  # no answer


def values(text: str, kind: str) -> set[str]:
    """What the text says of that kind, comparable across sentences: its numbers as digits
    ("1,015" -> "1015") and the words of its matches ("Kawann Short" -> kawann, short; not
    units or prepositions: "9 am" and "10 am" do not agree), so
    that two sentences can be seen to give the same answer or different ones."""
    found = {re.sub(r"\D", "", m) for m in _DIGITS.findall(text)} \
        if kind in (NUMBER, TIME, CONTACT) else set()
    for m in _EVIDENCE[kind].finditer(text):       # "Mo-Fr" -> mo, fr; "9 am" -> 9
        found |= {w.lower() for w in _VALUE_WORD.findall(m.group(0))
                  if w.lower() not in _UNITS}
    return found


def density(text: str, kind: str, cap: int = 4) -> float:
    """How much content of that kind the text has, 0..1 (matches, capped): "Mo-Fr 9-18 Uhr,
    Sa nach Vereinbarung" says more about opening hours than "founded in 2014"."""
    return min(cap, len(_EVIDENCE[kind].findall(text))) / cap


def contact_kinds(text: str) -> set[str]:
    return {k for k, p in CONTACT_KINDS.items() if p.search(text)}
