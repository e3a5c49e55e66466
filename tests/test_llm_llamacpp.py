"""The embedded llama.cpp backend with the real default model (SmolLM2-135M-Instruct)."""

from __future__ import annotations

import re

import pytest

from agentmodes.errors import ConfigError, LLMError
from agentmodes.llm import GenerationOptions, collect, embedded_model, load_llm, step_grammar
from agentmodes.llm.llamacpp import LlamaCppModel, default_model_path

pytestmark = pytest.mark.llm

QUESTION = [{"role": "system", "content": "You answer questions about documents."},
            {"role": "user", "content": "Which city is the capital of France?"}]

STEP_PATTERNS = {
    "react": r'THOUGHT: [^\n]+\n(ACTION: (rag_search|lexical_search)\("[^"\n]+"\)|FINAL ANSWER: [^\n]+)',
    "reflact": r'REFLECTION: [^\n]+\n(ACTION: (rag_search|lexical_search)\("[^"\n]+"\)|FINAL ANSWER: [^\n]+)',
    "act": r'ACTION: (rag_search|lexical_search|respond)\("[^"\n]+"\)',
}
STEP_PROMPTS = {
    "react": "Answer with\nTHOUGHT: your reasoning\nACTION: rag_search(\"query\")",
    "reflact": "Answer with\nREFLECTION: where you stand relative to the goal\n"
               "ACTION: rag_search(\"query\")",
    "act": "Answer with ACTION: rag_search(\"query\") or ACTION: respond(\"answer\")",
}


@pytest.fixture(scope="module")
def model():
    return load_llm("local")


def test_streams_text_deltas_and_reports_usage(model):
    chunks = list(model.stream(QUESTION, GenerationOptions(max_tokens=16)))
    texts = [c.text for c in chunks if c.text]
    assert len(texts) > 1 and "".join(texts).strip()
    usage = chunks[-1].usage
    assert usage is not None and chunks[-1].finish_reason in {"stop", "length"}
    assert usage.prompt_tokens == len(model.tokenize(model.render(QUESTION)))
    assert 0 < usage.completion_tokens <= 16 and usage.calls == 1


def test_uses_the_models_chat_template(model):
    prompt = model.render(QUESTION)
    assert prompt.startswith("<|im_start|>system\nYou answer questions about documents.")
    assert prompt.endswith("<|im_start|>assistant\n")


def test_stop_sequence_cuts_the_output(model):
    free = collect(model.stream(QUESTION, GenerationOptions(max_tokens=24))).text
    words = free.split()
    assert len(words) >= 4, free
    stop = " " + words[2]
    result = collect(model.stream(QUESTION, GenerationOptions(max_tokens=24, stop=[stop])))
    assert result.text == free[:free.index(stop)]
    assert result.finish_reason == "stop"


@pytest.mark.parametrize("mode", ["react", "reflact", "act"])
def test_grammar_forces_a_well_formed_step(model, mode):
    grammar = step_grammar(mode, ["rag_search", "lexical_search", "respond"])
    messages = [{"role": "system", "content": STEP_PROMPTS[mode]},
                {"role": "user", "content": "Who was the first person on the moon?"}]
    result = collect(model.stream(messages, GenerationOptions(max_tokens=220, grammar=grammar)))
    assert re.fullmatch(STEP_PATTERNS[mode], result.text), result.text
    assert result.finish_reason == "stop"      # the grammar ended the step, not the budget


def test_second_call_reuses_the_shared_prompt_prefix():
    episode = [{"role": "system", "content": STEP_PROMPTS["reflact"] + "\nTools: rag_search."},
               {"role": "user", "content": "When was the Eiffel Tower built?"}]
    grammar = step_grammar("reflact", ["rag_search"])
    options = GenerationOptions(max_tokens=40, grammar=grammar)
    for reuse in (True, False):
        model = LlamaCppModel(prefix_reuse=reuse)
        first = collect(model.stream(episode, options))
        assert first.usage.cached_tokens == 0
        grown = episode + [{"role": "assistant", "content": first.text},
                           {"role": "user", "content": "OBSERVATION: [1] The Eiffel Tower "
                                                       "was built from 1887 to 1889."}]
        second = collect(model.stream(grown, options))
        model.close()
        if reuse:
            # the whole first prompt was still in the KV cache: only the new turns are read
            assert second.usage.cached_tokens >= first.usage.prompt_tokens
            # and so was most of the model's own step (its label is written with the
            # tokenizer's tokens, so the re-tokenized history matches the cache)
            assert second.usage.cached_tokens >= (first.usage.prompt_tokens
                                                  + first.usage.completion_tokens // 2)
            evaluated = second.usage.prompt_tokens - second.usage.cached_tokens
            assert evaluated <= second.usage.prompt_tokens - first.usage.prompt_tokens
        else:
            assert second.usage.cached_tokens == 0


def test_identical_prompt_is_answered_from_the_cache_with_one_token_evaluated(model):
    collect(model.stream(QUESTION, GenerationOptions(max_tokens=1)))
    again = collect(model.stream(QUESTION, GenerationOptions(max_tokens=1)))
    assert again.usage.cached_tokens == again.usage.prompt_tokens - 1


def test_closing_midway_releases_the_model(model):
    stream = model.stream(QUESTION, GenerationOptions(max_tokens=100))
    assert next(stream).text
    stream.close()
    assert collect(model.stream(QUESTION, GenerationOptions(max_tokens=3))).text


def test_prompt_longer_than_the_context_is_a_clear_error():
    small = LlamaCppModel(n_ctx=256)        # llama.cpp's smallest context
    with pytest.raises(LLMError, match=r"the prompt is \d+ tokens, more than the model's "
                                       r"context of 256"):
        collect(small.stream([{"role": "user", "content": "word " * 400}]))
    small.close()


def test_missing_model_file_is_a_one_line_error(tmp_path):
    with pytest.raises(LLMError, match="model file not found: .*nope.gguf"):
        LlamaCppModel(tmp_path / "nope.gguf")
    with pytest.raises(LLMError, match="model file not found"):
        load_llm(str(tmp_path / "nope.gguf"))


def test_file_that_is_not_a_gguf_is_refused_before_llama_cpp_sees_it(tmp_path):
    fake = tmp_path / "notes.gguf"
    fake.write_text("these are my notes, not a model")
    with pytest.raises(LLMError, match="is not a GGUF model file"):
        load_llm(str(fake))


def test_broken_gguf_is_a_one_line_error_not_a_crash(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(default_model_path().read_bytes()[:4096])     # a truncated model
    with pytest.raises(LLMError, match="llama.cpp could not load") as err:
        LlamaCppModel(broken)
    assert "\n" not in str(err.value)


def test_registry_caches_the_embedded_model_and_knows_the_forms(monkeypatch):
    assert load_llm("local") is load_llm(None) is load_llm(str(default_model_path()))
    monkeypatch.setenv("AGENTMODES_LLM", "openai:gpt-4o-mini")
    assert load_llm(None).name == "openai:gpt-4o-mini"
    with pytest.raises(ConfigError, match="unknown LLM 'gpt4': use 'local', a path"):
        load_llm("gpt4")


def test_a_closed_model_refuses_calls_and_the_registry_loads_a_fresh_one():
    # a cache entry of its own (no prefix reuse), so other tests keep the shared default
    shared = embedded_model(None, prefix_reuse=False)
    assert embedded_model(None, prefix_reuse=False) is shared
    shared.close()
    shared.close()                                   # idempotent
    with pytest.raises(LLMError, match="was closed"):
        collect(shared.stream(QUESTION, GenerationOptions(max_tokens=2)))
    fresh = embedded_model(None, prefix_reuse=False)
    assert fresh is not shared
    assert collect(fresh.stream(QUESTION, GenerationOptions(max_tokens=2))).text


@pytest.mark.parametrize("name", ["AGENTMODES_N_CTX", "AGENTMODES_THREADS"])
def test_bad_runtime_settings_are_config_errors(monkeypatch, name):
    monkeypatch.setenv(name, "lots")
    with pytest.raises(ConfigError, match=f"{name} must be a positive whole number"):
        LlamaCppModel()
