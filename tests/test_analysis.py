"""German and English analysis: stemming, stop words, folding, language detection."""

from agentmodes.knowledge.analysis import Analyzer, detect_language, fold_diacritics
from agentmodes.knowledge.searcher import Searcher

GERMAN_DOCS = [
    "Die Öffnungszeit der DG Agentur ist montags bis freitags von 9 bis 17 Uhr.",
    "Die Agentur berät Unternehmen bei Förderanträgen und Zuschüssen.",
    "Parkplätze gibt es hinter dem Gebäude in der Hauptstraße.",
]


def test_oeffnungszeiten_finds_oeffnungszeit():
    searcher = Searcher([1, 2, 3], GERMAN_DOCS)
    hits = searcher.search("Öffnungszeiten", mode="lexical", k=3)
    assert hits and hits[0].chunk_id == 1


def test_case_and_diacritics_are_folded():
    searcher = Searcher([1, 2, 3], GERMAN_DOCS)
    for query in ("ÖFFNUNGSZEITEN", "Offnungszeiten", "öffnungszeit"):
        assert searcher.search(query, mode="lexical", k=1)[0].chunk_id == 1, query
    assert searcher.search("Hauptstrasse", mode="lexical", k=1)[0].chunk_id == 3


def test_german_stemming_and_stop_words():
    analyzer = Analyzer("de")
    assert analyzer.terms("Häuser") == analyzer.terms("Haus")
    assert analyzer.terms("die und der das") == []
    assert analyzer.terms("Zuschüssen") == analyzer.terms("Zuschuss")


def test_english_stemming_and_stop_words():
    analyzer = Analyzer("en")
    assert analyzer.terms("running") == analyzer.terms("runs") == ["run"]
    assert analyzer.terms("the and of") == []
    assert analyzer.terms("Café") == analyzer.terms("cafe")


def test_language_detection():
    assert detect_language("Wann hat die Agentur geöffnet?") == "de"
    assert detect_language("When is the agency open?") == "en"
    assert detect_language("Öffnungszeiten") == "de"  # umlauts are evidence
    assert detect_language("Python") is None
    assert detect_language("STRASSE oder Straße") == "de"


def test_auto_analysis_stems_each_text_in_its_language():
    analyzer = Analyzer("auto")
    # German plural -en is stripped only by the German stemmer.
    assert analyzer.terms("Die Zeiten sind lang") == ["zeit", "lang"]
    assert analyzer.terms("The houses are big") == ["hous", "big"]


def test_bare_query_falls_back_to_corpus_language():
    docs = ["Die Zeiten der Agentur sind kurz und die Beratung ist kostenlos.",
            "Der Parkplatz ist hinter dem Haus und er ist immer voll."]
    searcher = Searcher([1, 2], docs)
    # "Zeiten" alone carries no language evidence; the corpus is German, so it stems to zeit.
    assert searcher.search("Zeiten", mode="lexical", k=1)[0].chunk_id == 1


def test_fold_diacritics():
    assert fold_diacritics("Öffnung café naïve") == "Offnung cafe naive"
