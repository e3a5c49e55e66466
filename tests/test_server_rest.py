"""REST: chatbots, settings, conversations with persisted traces, uploads and ingest jobs."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from agentmodes.llm.scripted import ScriptedModel
from agentmodes.server import ServerConfig, create_app
from server_support import ANSWER, REFLACT_SCRIPT, make_service


@pytest.fixture
def service(tmp_path):
    svc = make_service(tmp_path)
    yield svc
    svc.close()


@pytest.fixture
def client(service):
    with TestClient(create_app(service, ServerConfig(max_upload_bytes=64 * 1024))) as c:
        yield c


def test_chat_stores_answer_with_trace_metadata_usage_and_timings(client):
    reply = client.post("/api/chat", json={"message": "Wann hat die DG Agentur geöffnet?"})
    assert reply.status_code == 200, reply.text
    message = reply.json()
    assert message["content"] == ANSWER and message["status"] == "complete"
    trace = message["agent_trace"]
    assert trace["mode"] == "reflact" and trace["iterations"] == 2
    assert trace["actions"] == [{"iteration": 1, "action": "rag_search",
                                 "param": "Öffnungszeiten DG Agentur"}]
    assert "9 bis 18 Uhr" in trace["observations"][0]["result_preview"]
    assert trace["steps"][0]["reflection"].startswith("Ich weiß noch nichts")
    assert message["stream_metadata"] == {"mode": "reflact", "iterations": 2,
                                          "sources_count": len(message["sources"])}
    assert message["sources"] and "9 bis 18 Uhr" in message["sources"][0]["text"]
    assert message["sources"][0]["title"] and message["usage"]["calls"] == 2
    assert message["usage"]["prompt_tokens"] > 0
    assert message["timings"]["total_ms"] >= message["timings"]["first_event_ms"] >= 0

    conv = client.get(f"/api/conversations/{message['conversation_id']}").json()
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant"]
    assert conv["messages"][1]["agent_trace"] == trace
    listed = client.get("/api/conversations", params={"chatbot": "default"}).json()
    assert listed[0]["id"] == conv["id"] and listed[0]["message_count"] == 2


def test_adaptive_exit_is_stored_in_trace_and_metadata(tmp_path):
    # A hit above the threshold ends the search loop after iteration 1 (seed: "Adaptive
    # Iteration (High Confidence)"); the answer comes from the final call.
    service = make_service(tmp_path, settings={"adaptive_iteration": True,
                                               "high_confidence_threshold": 0.3})
    with TestClient(create_app(service, ServerConfig())) as client:
        message = client.post("/api/chat", json={"message": "Wann hat die DG Agentur geöffnet?"}
                              ).json()
    exit_ = {"iteration": 1, "reason": "high_confidence"}
    assert message["content"] == ANSWER
    assert message["stream_metadata"]["adaptive_exit"] == exit_
    assert message["agent_trace"]["adaptive_exit"] == exit_
    assert message["stream_metadata"]["iterations"] == 1
    service.close()


def test_follow_up_sees_a_bounded_window_of_history(tmp_path):
    models: list[ScriptedModel] = []

    def factory():
        models.append(ScriptedModel(REFLACT_SCRIPT))
        return models[-1]

    service = make_service(tmp_path, model_factory=factory)
    service.history_turns = 2
    with TestClient(create_app(service, ServerConfig())) as client:
        first = client.post("/api/chat", json={"message": "Frage eins?"}).json()
        conv = first["conversation_id"]
        for n in ("zwei", "drei", "vier"):
            client.post("/api/chat", json={"message": f"Frage {n}?", "conversation_id": conv})
    first_prompt = " ".join(m["content"] for m in models[-1].prompts[0])
    # The last question sees the two turns before it, not the oldest one.
    assert "Frage drei?" in first_prompt and "Frage zwei?" in first_prompt
    assert "Frage eins?" not in first_prompt
    assert ANSWER.split(" [")[0] in first_prompt
    service.close()


def test_mode_override_routes_to_act(client):
    # ACT has no reasoning step: the reflection line of the script is not a reflection event.
    reply = client.post("/api/chat", json={"message": "Wann offen?", "mode": "act"}).json()
    assert reply["mode"] == "act" and reply["stream_metadata"]["mode"] == "act"
    assert all("reflection" not in s for s in reply["agent_trace"]["steps"])


def test_chatbot_crud_and_settings_validation_and_secret_masking(client):
    created = client.post("/api/chatbots", json={
        "name": "support", "description": "Hilfe", "settings": {
            "agent_mode": "react", "task_type": "multihop", "tavily_api_key": "tvly-secret"}})
    assert created.status_code == 201, created.text
    assert created.json()["settings"]["tavily_api_key"] == "***"
    assert "tvly-secret" not in created.text and "kb_path" not in created.json()
    assert client.post("/api/chatbots", json={"name": "support"}).status_code == 409
    bad = client.patch("/api/chatbots/support", json={"settings": {"agent_mode": "guess"}})
    assert bad.status_code == 422 and "agent_mode" in bad.json()["detail"]
    # Sending the masked value back keeps the stored secret.
    settings = client.get("/api/chatbots/support").json()["settings"]
    changed = client.patch("/api/chatbots/support", json={
        "settings": {**settings, "agent_max_iterations": 3}}).json()
    assert changed["settings"]["agent_max_iterations"] == 3
    stored = client.app.state.service.get_chatbot("support").settings
    assert stored["tavily_api_key"] == "tvly-secret"
    relabelled = client.patch("/api/chatbots/support", json={"language": "en"}).json()
    assert relabelled["language"] == relabelled["settings"]["language"] == "en"
    assert [b["name"] for b in client.get("/api/chatbots").json()] == ["default", "support"]
    assert client.delete("/api/chatbots/support").status_code == 204
    assert client.get("/api/chatbots/support").status_code == 404


def test_unknown_chatbot_and_conversation_are_404(client):
    assert client.post("/api/chat", json={"chatbot": "nope", "message": "x"}).status_code == 404
    assert client.get("/api/conversations/0123").status_code == 404


def _wait_job(client, job_id: str) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        job = client.get(f"/api/jobs/{job_id}").json()
        if job["status"] in ("done", "failed"):
            return job
        time.sleep(0.05)
    raise AssertionError("ingest job did not finish")


def test_upload_ingests_in_background_and_documents_become_searchable(client):
    files = [("files", ("../../evil/Preise 2025.md",
                        "# Preise\n\nEine Beratung kostet 40 Euro pro Stunde.\n".encode(),
                        "text/markdown"))]
    reply = client.post("/api/chatbots/default/documents", files=files)
    assert reply.status_code == 202, reply.text
    job = _wait_job(client, reply.json()["id"])
    assert job["status"] == "done", job
    assert job["report"]["added"] == ["Preise 2025.md"]       # name only, no server path
    assert job["progress"]["phase"] == "done"
    docs = client.get("/api/chatbots/default/documents").json()
    assert [d["name"] for d in docs] == ["Preise 2025.md"]    # the directories were dropped
    served = client.get("/api/chatbots/default/documents/Preise 2025.md")
    assert served.status_code == 200 and "40 Euro" in served.text
    kb = client.app.state.service.knowledge(client.app.state.service.get_chatbot("default"))
    assert any("40 Euro" in h.text for h in kb.search("Beratung kostet", mode="lexical", k=3))


def test_upload_of_several_types_in_one_batch(client, tmp_path):
    from kb_fixtures import HTML, write_pdf

    pdf = write_pdf(tmp_path / "plants.pdf").read_bytes()
    files = [("files", ("plants.pdf", pdf, "application/pdf")),
             ("files", ("volcano.html", HTML.encode(), "text/html")),
             ("files", ("notes.txt", "Fähren fahren stündlich.".encode(), "text/plain"))]
    job = _wait_job(client, client.post("/api/chatbots/default/documents", files=files).json()["id"])
    assert job["status"] == "done" and sorted(job["report"]["added"]) == [
        "notes.txt", "plants.pdf", "volcano.html"]
    kb = client.app.state.service.knowledge(client.app.state.service.get_chatbot("default"))
    assert any("Chlorophyll" in h.text for h in kb.search("Chlorophyll", mode="lexical", k=3))


def test_uploads_in_any_text_encoding_and_office_formats(client, tmp_path):
    # The upload path decodes like the CLI: a Windows-1252 note and a UTF-16 one are
    # accepted and searchable; a Word file is read with its structure.
    from agentmodes.bench.format_samples import make_docx

    files = [("files", ("notiz.md", "# Notiz\n\nDie Fähre nach Föhr fährt stündlich."
                        .encode("cp1252"), "text/markdown")),
             ("files", ("utf16.txt", "Grüße aus Nürnberg und Umgebung.".encode("utf-16"),
                        "text/plain")),
             ("files", ("handbuch.docx", make_docx(tmp_path / "h.docx").read_bytes(),
                        "application/octet-stream"))]
    reply = client.post("/api/chatbots/default/documents", files=files)
    assert reply.status_code in (200, 201, 202), reply.text
    job = _wait_job(client, reply.json()["id"])
    assert job["status"] == "done" and sorted(job["report"]["added"]) == [
        "handbuch.docx", "notiz.md", "utf16.txt"], job
    kb = client.app.state.service.knowledge(client.app.state.service.get_chatbot("default"))
    assert "Föhr" in kb.search("Fähre Föhr", mode="lexical", k=1)[0].text
    assert "Nürnberg" in kb.search("Grüße Nürnberg", mode="lexical", k=1)[0].text
    hit = kb.search("Website Preis", mode="lexical", k=1)[0]
    assert hit.heading_path[-1] == "Preise" and "4.900" in hit.text


def test_one_bad_file_rejects_the_whole_batch(client):
    files = [("files", ("good.md", b"# Gut\n\nAlles gut.", "text/markdown")),
             ("files", ("bad.pdf", b"not a pdf", "application/pdf"))]
    assert client.post("/api/chatbots/default/documents", files=files).status_code == 422
    assert client.get("/api/chatbots/default/documents").json() == []
    assert client.get("/api/chatbots/default/jobs").json() == []


@pytest.mark.parametrize("name,content,why", [
    ("run.exe", b"MZ\x90\x00", "not accepted"),
    ("fake.pdf", b"<html>not a pdf</html>", "not a PDF"),
    ("notes.txt", b"abc\x00\x01\x02", "binary content"),
    ("fake.docx", b"# Markdown pretending", "not a DOCX file"),
    ("noextension", b"hello", "no file extension"),
])
def test_upload_rejects_wrong_types(client, name, content, why):
    reply = client.post("/api/chatbots/default/documents",
                        files=[("files", (name, content, "application/octet-stream"))])
    assert reply.status_code == 422 and why in reply.json()["detail"]
    assert client.get("/api/chatbots/default/documents").json() == []


def test_request_and_upload_size_limits(client):
    big = b"# x\n" + b"a" * (70 * 1024)
    reply = client.post("/api/chatbots/default/documents", files=[("files", ("big.md", big))])
    assert reply.status_code == 413
    huge_question = {"message": "x" * 10, "chatbot": "default", "pad": "y" * (2 * 1024 * 1024)}
    assert client.post("/api/chat", json=huge_question).status_code == 413


def test_document_paths_cannot_escape_the_upload_dir(client, tmp_path):
    (tmp_path / "secret.md").write_text("top secret")
    for name in ("..%2Fsecret.md", "%2E%2E%2F%2E%2E%2Fsecret.md", "....//secret.md"):
        reply = client.get(f"/api/chatbots/default/documents/{name}")
        assert reply.status_code == 404 and "top secret" not in reply.text


def test_openapi_page_and_web_page_are_served(client):
    assert client.get("/docs").status_code == 200
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/api/chatbots", "/v1/chat/completions", "/api/chat/stream"} <= set(paths)
    page = client.get("/")
    assert page.status_code == 200 and "/static/js/app.js" in page.text
    # Module scripts (the page's and the vendored libraries) need a JavaScript media type.
    for script in ("js/app.js", "vendor/markdown-it.min.js", "vendor/purify.es.js"):
        reply = client.get(f"/static/{script}")
        assert reply.status_code == 200 and "javascript" in reply.headers["content-type"]
