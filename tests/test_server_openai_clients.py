"""The clients people point at an OpenAI-compatible server, against a live one on 127.0.0.1:
LangChain's ChatOpenAI (answers, streaming, with_structured_output), LangChain's ChatDeepSeek
(which reads `reasoning_content` as the model's thinking) and LiteLLM."""

from __future__ import annotations

import json
import os

import pytest
from pydantic import BaseModel

from server_support import ANSWER, REFLACT_SCRIPT, live_server, make_service

# LiteLLM fetches a price list from the internet at import unless told to use its own copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
langchain_openai = pytest.importorskip("langchain_openai")
litellm = pytest.importorskip("litellm")
QUESTION = "Wann hat die DG Agentur geöffnet?"
HOURS = {"tage": "Montag bis Freitag", "von": 9, "bis": 18}


class Hours(BaseModel):
    """Opening hours."""
    tage: str
    von: int
    bis: int


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    service = make_service(tmp_path_factory.mktemp("clients"),
                           script=REFLACT_SCRIPT + [json.dumps(HOURS, ensure_ascii=False)])
    with live_server(service) as url:
        yield f"{url}/v1"
    service.close()


def test_langchain_chat_openai_invoke_stream_and_structured_output(base_url):
    chat = langchain_openai.ChatOpenAI(model="default", base_url=base_url, api_key="x",
                                       max_retries=0)
    assert chat.invoke(QUESTION).content == ANSWER
    assert "".join(chunk.content for chunk in chat.stream(QUESTION)) == ANSWER
    # with_structured_output's default is response_format json_schema.
    assert chat.with_structured_output(Hours).invoke(QUESTION) == Hours(**HOURS)
    # Refused parameters come back as errors LangChain raises, not as silently wrong output.
    with pytest.raises(Exception, match="n > 1"):
        langchain_openai.ChatOpenAI(model="default", base_url=base_url, api_key="x", n=2,
                                    max_retries=0).invoke(QUESTION)


def test_langchain_reads_the_trace_as_reasoning(base_url):
    deepseek = pytest.importorskip("langchain_deepseek")
    chat = deepseek.ChatDeepSeek(model="default", api_base=base_url, api_key="x", max_retries=0)
    message = chat.invoke(QUESTION)
    assert message.content == ANSWER
    assert 'Action: rag_search("Öffnungszeiten DG Agentur")' in \
        message.additional_kwargs["reasoning_content"]
    chunks = list(chat.stream(QUESTION))
    thinking = "".join(c.additional_kwargs.get("reasoning_content", "") for c in chunks)
    assert thinking.startswith("Iteration 1\nReflection: Ich weiß noch nichts")
    assert "".join(c.content for c in chunks) == ANSWER


def test_litellm_completion_streaming_and_embeddings(base_url):
    ask = dict(model="openai/default", api_base=base_url, api_key="x",
               messages=[{"role": "user", "content": QUESTION}])
    reply = litellm.completion(**ask)
    assert reply.choices[0].message.content == ANSWER
    assert "Observation: [1] Kontakt" in reply.choices[0].message.reasoning_content
    parts = list(litellm.completion(**ask, stream=True))
    assert "".join(p.choices[0].delta.content or "" for p in parts) == ANSWER
    assert "Reflection: Ich weiß" in "".join(
        getattr(p.choices[0].delta, "reasoning_content", None) or "" for p in parts)
    structured = litellm.completion(**ask, response_format=Hours)
    assert json.loads(structured.choices[0].message.content) == HOURS
    vectors = litellm.embedding(model="openai/default", api_base=base_url, api_key="x",
                                input=["Öffnungszeiten", "Telefon"])
    assert len(vectors.data) == 2 and len(vectors.data[0]["embedding"]) == 64
