"""Prompt files and language choice (prompts/)."""

import re
from pathlib import Path

import pytest

from agentmodes import prompts
from agentmodes.settings import ChatbotSettings
from data_support import SEEDS


@pytest.mark.parametrize("text, lang", [
    ("Wann hat die DG Agentur geöffnet?", "de"),
    ("Wie erreiche ich euch?", "de"),
    ("Öffnungszeiten", "de"),
    ("When is the agency open?", "en"),
    ("What services does DG Agentur offer?", "en"),
    ("How can I reach you on Saturday?", "en"),
])
def test_detect_language(text, lang):
    assert prompts.detect_language(text) == lang


def test_no_evidence_gives_the_default():
    assert prompts.detect_language("DG Agentur 2024", default="de") == "de"
    assert prompts.detect_language("DG Agentur 2024") == "en"


def test_language_setting_wins_over_detection():
    assert prompts.choose_language(ChatbotSettings(language="en"), "Wann habt ihr offen?") == "en"
    assert prompts.choose_language(ChatbotSettings(), "Wann habt ihr offen?") == "de"


@pytest.mark.parametrize("lang", prompts.LANGUAGES)
@pytest.mark.parametrize("name", ["act", "react", "reflact", "tools", "final_answer",
                                  "parse_error", "hints", "fallback", "not_found"])
def test_every_prompt_exists_in_both_languages(name, lang):
    assert prompts.load(name, lang).strip()


def test_hints_cover_every_parse_error_code():
    source = (Path(prompts.__file__).parents[1] / "parsing.py").read_text()
    codes = set(re.findall(r'"(empty|no_action|bad_action|empty_argument|empty_answer)"', source))
    for lang in prompts.LANGUAGES:
        assert codes <= set(prompts.hints(lang)), lang


@pytest.mark.skipif(not SEEDS.exists(), reason=f"seed documents not found at {SEEDS}")
@pytest.mark.parametrize("mode, seed", [("act", "002_*.txt"), ("reflact", "000_*.txt")])
def test_german_default_prompts_are_the_seeds_verbatim(mode, seed):
    seed_text = next(SEEDS.glob(seed)).read_text(encoding="utf-8")
    for line in prompts.load(mode, "de").splitlines():
        assert line in seed_text, line
