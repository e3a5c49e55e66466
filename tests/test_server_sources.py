"""The knowledge-base views behind the page's source viewer, and the conversation routes
behind rename, delete and export: a KB ingested with the CLI lists its documents and serves
the passage an answer cites; nothing shows a server-side path."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from agentmodes.server import ServerConfig, create_app
from server_support import ANSWER, make_service


@pytest.fixture
def service(tmp_path):
    svc = make_service(tmp_path)
    yield svc
    svc.close()


@pytest.fixture
def client(service):
    with TestClient(create_app(service, ServerConfig())) as c:
        yield c


def test_cli_ingested_documents_are_listed_without_server_paths(client, tmp_path):
    docs = client.get("/api/chatbots/default/kb/documents").json()
    assert [(d["name"], d["title"], d["chunks"], d["upload"]) for d in docs] == [
        ("kontakt.md", "Kontakt", 2, None)]
    assert str(tmp_path) not in json.dumps(docs)
    # The upload listing (files the server stored) knows nothing of a CLI-ingested KB.
    assert client.get("/api/chatbots/default/documents").json() == []


def test_a_cited_passage_is_served_with_its_neighbours(client):
    message = client.post("/api/chat", json={"message": "Wann hat die DG Agentur geöffnet?"}
                          ).json()
    assert message["content"] == ANSWER
    cited = message["sources"][0]
    view = client.get(f"/api/chatbots/default/kb/passages/{cited['chunk_id']}").json()
    assert view["chunk_id"] == cited["chunk_id"] and view["name"] == "kontakt.md"
    texts = [p["text"] for p in view["passages"]]
    assert any("9 bis 18 Uhr" in t for t in texts) and any("97554990" in t for t in texts)
    highlighted = [p for p in view["passages"] if p["chunk_id"] == cited["chunk_id"]]
    assert highlighted and highlighted[0]["text"] == cited["text"]

    whole = client.get(f"/api/chatbots/default/kb/documents/{view['id']}").json()
    assert [p["position"] for p in whole["passages"]] == [0, 1]
    page = client.get(f"/api/chatbots/default/kb/documents/{view['id']}",
                      params={"offset": 1, "limit": 1}).json()
    assert [p["position"] for p in page["passages"]] == [1]


def test_unknown_passages_documents_and_chatbots_are_404(client):
    assert client.get("/api/chatbots/default/kb/passages/999999").status_code == 404
    assert client.get("/api/chatbots/default/kb/documents/999999").status_code == 404
    assert client.get("/api/chatbots/nope/kb/documents").status_code == 404
    assert client.get("/api/chatbots/default/kb/documents/abc").status_code == 422


def test_the_views_need_the_chat_key_when_keys_are_set(service):
    config = ServerConfig(admin_key="admin-1", chat_key="chat-1")
    with TestClient(create_app(service, config)) as client:
        assert client.get("/api/chatbots/default/kb/documents").status_code == 401
        ok = client.get("/api/chatbots/default/kb/documents",
                        headers={"Authorization": "Bearer chat-1"})
        assert ok.status_code == 200 and ok.json()[0]["name"] == "kontakt.md"


def test_rename_and_export_a_conversation_as_markdown_and_json(client):
    message = client.post("/api/chat", json={"message": "Wann hat die DG Agentur geöffnet?"}
                          ).json()
    conv_id = message["conversation_id"]
    renamed = client.patch(f"/api/conversations/{conv_id}", json={"title": "Öffnungszeiten"})
    assert renamed.status_code == 200 and renamed.json()["title"] == "Öffnungszeiten"
    assert client.get("/api/conversations").json()[0]["title"] == "Öffnungszeiten"
    assert client.patch(f"/api/conversations/{conv_id}", json={"title": ""}).status_code == 422
    assert client.patch("/api/conversations/nope", json={"title": "x"}).status_code == 404

    md = client.get(f"/api/conversations/{conv_id}/export", params={"format": "md"})
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert 'attachment; filename="ffnungszeiten-' in md.headers["content-disposition"]
    text = md.text
    assert text.startswith("# Öffnungszeiten\n")
    assert "## Question\n\nWann hat die DG Agentur geöffnet?" in text
    assert f"## Answer\n\n{ANSWER}" in text and "[1] Kontakt" in text
    assert "(kontakt.md)" in text and "/tmp" not in text
    assert "_Mode: reflact_" in text

    data = client.get(f"/api/conversations/{conv_id}/export", params={"format": "json"}).json()
    assert data["conversation"]["id"] == conv_id
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    assert data["messages"][1]["agent_trace"]["actions"][0]["action"] == "rag_search"
    assert client.get(f"/api/conversations/{conv_id}/export",
                      params={"format": "pdf"}).status_code == 422

    assert client.delete(f"/api/conversations/{conv_id}").status_code == 204
    assert client.get(f"/api/conversations/{conv_id}/export").status_code == 404
