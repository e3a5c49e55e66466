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
    ("DG代理公司什么时候营业？", "zh"),
    ("使用python找到[1,n]之间的全部质数", "zh"),
    ("编写一个Python函数 find_primes(n)，返回所有素数。", "zh"),
    ("营业时间", "zh"),
    ("東京の天気はどうですか？", "en"),             # Japanese (kana): no prompts, the default
    ("What does 你好 mean in English?", "en"),
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
@pytest.mark.parametrize("name", ["act", "react", "reflact", "plan-and-solve", "plan_step",
                                  "tools", "final_answer", "parse_error", "hints", "not_found"])
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


@pytest.mark.parametrize("mode, opening", [
    ("act", "你可以使用以下工具："), ("react", "你是一个 ReAct 智能体。"),
    ("reflact", "你是一个 ReflAct 智能体。")])
def test_chinese_input_gets_chinese_prompts_with_english_step_labels(mode, opening):
    from agent_fakes import make_agent

    agent, model = make_agent(["REFLECTION: r\nFINAL ANSWER: 周一至周五 [1]"] * 3,
                              agent_mode=mode, require_search=False)
    agent.run("DG代理公司什么时候营业？")
    system = model.calls[0]["messages"][0]["content"]
    assert system.startswith(opening)
    assert "## 为此机器人启用的工具（只使用这些）：" in system
    assert "- rag_search(query): 在文档中进行语义搜索" in system
    labels = {"act": ["ACTION:"], "react": ["THOUGHT:", "ACTION:", "FINAL ANSWER:"],
              "reflact": ["REFLECTION:", "ACTION:", "FINAL ANSWER:"]}[mode]
    assert all(label in system for label in labels)


def test_language_zh_is_a_setting_and_observations_follow_it():
    from agent_fakes import make_agent

    agent, model = make_agent(['REFLECTION: 我需要营业时间\nACTION: rag_search("Öffnungszeiten")',
                               "REFLECTION: 目标已达成。\nFINAL ANSWER: 周一至周五 9-18 点 [1]"],
                              language="zh")
    result = agent.run("When are you open?")
    assert model.calls[0]["messages"][0]["content"].startswith("你是一个 ReflAct 智能体。")
    assert "(相关度: 0.50)" in model.calls[1]["messages"][-1]["content"]
    assert result.answer == "周一至周五 9-18 点 [1]"


def test_chinese_reflection_parts():
    from agentmodes.modes.reflact import reflection_parts
    assert reflection_parts("1. 当前状态：我知道营业时间。\n2. 最新发现：[1] 有营业时间。\n"
                            "3. 目标关系：目标已达成。") == {
        "state": "我知道营业时间。", "discovery": "[1] 有营业时间。", "goal_relation": "目标已达成。"}


@pytest.mark.parametrize("name", ["draft_code", "draft_text", "review", "review_efficiency",
                                  "refine_code", "refine_text", "self_reflection", "unit_tests",
                                  "context", "evaluation", "history", "lessons", "previous",
                                  "cot", "plan_and_solve_code", "plan_and_solve_text"])
@pytest.mark.parametrize("lang", prompts.LANGUAGES)
def test_every_self_correction_prompt_exists_in_every_language(name, lang):
    from importlib import resources
    path = resources.files("agentmodes").joinpath("prompts", "selfcorrect", f"{name}.{lang}.md")
    assert path.is_file() and path.read_text(encoding="utf-8").strip()
