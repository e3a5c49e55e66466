"""A real browser (Debian's chromium driven by playwright) uses the web page: ask, watch the
answer stream in beside the trace, reopen the conversation, edit settings. Saves a
screenshot to tests/artifacts/server_page.png."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentmodes.server import ServerConfig
from server_support import ANSWER, REFLACT_SCRIPT, SlowScriptedModel, live_server, make_service

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent / "artifacts"
playwright = pytest.importorskip("playwright.sync_api")
REFINED = "Montag bis Freitag 9 bis 18 Uhr, samstags nach Vereinbarung [1]."
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="needs Debian's chromium (apt-get install -y chromium)")


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield browser
        browser.close()


@pytest.fixture
def page(tmp_path, browser):
    # Slow enough that the page shows the trace growing before the answer arrives.
    # Runs with a Reflection pass use the two extra replies (critique, refinement).
    script = REFLACT_SCRIPT + ['{"issues": ["Der Samstag fehlt."], "verdict": "revise"}', REFINED]
    service = make_service(tmp_path, model_factory=lambda: SlowScriptedModel(script, delay=0.01))
    with live_server(service) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url + "/")
        yield page, service
        page.close()
    service.close()


def test_ask_streams_answer_and_trace_then_history_and_settings(page):
    page, service = page
    expect = playwright.expect
    expect(page.locator("#chatbot")).to_have_value("default")
    page.select_option("#mode", "reflact")
    page.fill("#question", "Wann hat die DG Agentur geöffnet?")
    page.click("#send")

    # The trace fills in while the run is going: reflection first, then the action.
    trace = page.locator(".turn .trace")
    expect(trace.locator(".row.reflection").first).to_contain_text("Ich weiß noch nichts")
    expect(trace.locator(".row.action").first).to_contain_text(
        'rag_search("Öffnungszeiten DG Agentur")')
    expect(trace.locator(".row.observation").first).to_contain_text("9 bis 18 Uhr")
    expect(page.locator(".turn .answer-text")).to_have_text(ANSWER, timeout=15_000)
    expect(trace.locator("details")).to_have_count(2)
    expect(page.locator(".turn .sources li a").first).to_have_attribute(
        "href", "/api/chatbots/default/documents/kontakt.md")
    expect(page.locator(".turn .meta")).to_contain_text("reflact · 2 iteration(s)")

    # The iteration blocks collapse.
    first = trace.locator("details").first
    first.locator("summary").click()
    expect(first).not_to_have_attribute("open", "")

    # A past conversation reopens with its stored trace.
    page.click("#new-conversation")
    expect(page.locator(".turn")).to_have_count(0)
    page.locator("#conversations li").first.click()
    expect(page.locator(".turn .answer-text")).to_have_text(ANSWER)
    expect(page.locator(".turn .trace .row.action").first).to_contain_text("rag_search")

    # Settings edit goes through the API and is stored.
    page.locator("#settings-panel summary").click()
    text = page.locator("#settings-json").input_value()
    page.fill("#settings-json", text.replace('"agent_max_iterations": 5',
                                             '"agent_max_iterations": 4'))
    page.click("#settings-form button")
    expect(page.locator("#settings-message")).to_have_text("Saved.")
    assert service.get_chatbot("default").settings["agent_max_iterations"] == 4

    # A follow-up with a Reflection pass: the critique shows in the trace, the answer is
    # replaced by the refined one.
    page.select_option("#reflect", "1")
    page.fill("#question", "Und am Samstag?")
    page.click("#send")
    follow = page.locator(".turn").nth(1)
    expect(follow.locator(".answer-text")).to_have_text(REFINED, timeout=15_000)
    review = follow.locator(".trace details", has_text="Reflection round 1")
    expect(review).to_contain_text("Critique (revise)")
    expect(review).to_contain_text("Der Samstag fehlt.")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "server_page.png"), full_page=True)


def test_with_api_keys_the_page_uploads_and_chats_with_the_stored_key(tmp_path, browser):
    service = make_service(tmp_path)
    config = ServerConfig(admin_key="admin-Qq7", chat_key="chat-Ww3")
    (tmp_path / "preise.md").write_text("# Preise\n\nEine Beratung kostet 90 Euro.\n",
                                        encoding="utf-8")
    with live_server(service, config) as url:
        page = browser.new_page()
        page.goto(url + "/")
        expect = playwright.expect
        expect(page.locator("#status")).to_contain_text("needs an API key")
        page.once("dialog", lambda dialog: dialog.accept("admin-Qq7"))
        page.click("#key-button")
        expect(page.locator("#chatbot")).to_have_value("default")

        page.locator("#documents-panel summary").click()
        page.set_input_files("#upload-files", str(tmp_path / "preise.md"))
        page.click("#upload-form button")
        expect(page.locator("#upload-message")).to_have_text(
            "Ingested: 1 added, 0 updated, 0 skipped.", timeout=20_000)
        expect(page.locator("#documents li")).to_have_text(["preise.md"])

        page.fill("#question", "Wann hat die DG Agentur geöffnet?")
        page.click("#send")
        expect(page.locator(".turn .answer-text")).to_have_text(ANSWER, timeout=15_000)
        page.close()
    assert [d.name for d in (tmp_path / "data").glob("uploads/*/preise.md")] == ["preise.md"]
    service.close()
