"""A real browser (Debian's chromium driven by playwright) uses the web page as a person would:
ask, watch the answer stream in beside a readable trace, open a cited source, rename, export
and delete a conversation, edit settings; Markdown rendered and an injection attempt
sanitised; a phone-sized window in dark mode driven by the keyboard; a keyed server whose
document views carry the key. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentmodes.server import ServerConfig
from server_support import ANSWER, REFLACT_SCRIPT, SlowScriptedModel, live_server, make_service

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent / "artifacts"
playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect
# A loaded 2-core machine (8 engineers) can take seconds per step; 5 s is playwright's default.
expect.set_options(timeout=10_000)
REFINED = "Montag bis Freitag 9 bis 18 Uhr, samstags nach Vereinbarung [1]."
QUESTION = "Wann hat die DG Agentur geöffnet?"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="needs Debian's chromium (apt-get install -y chromium)")
# Records every text the status line shows, to check that no raw event name reaches it.
WATCH_STATUS = """() => { window.__statuses = [];
  new MutationObserver(() => window.__statuses.push(document.getElementById('status').textContent))
    .observe(document.getElementById('status'), {childList: true, characterData: true, subtree: true}); }"""


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield browser
        browser.close()


def _serve(tmp_path, script, config=None, delay=0.01):
    service = make_service(tmp_path, model_factory=lambda: SlowScriptedModel(script, delay=delay))
    return service, live_server(service, config)


@pytest.fixture
def page(tmp_path, browser):
    # Slow enough that the page shows the trace growing before the answer arrives.
    # Runs with a Reflection pass use the two extra replies (critique, refinement).
    script = REFLACT_SCRIPT + ['{"issues": ["Der Samstag fehlt."], "verdict": "revise"}', REFINED]
    service, server = _serve(tmp_path, script)
    with server as url:
        context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
        page = context.new_page()
        page.goto(url + "/")
        yield page, service
        context.close()
    service.close()


def _ask(page, question):
    page.fill("#question", question)
    page.click("#send")


def test_ask_streams_answer_and_trace_then_sources_history_and_settings(page, tmp_path):
    page, service = page
    expect(page.locator("#chatbot")).to_have_value("default")
    expect(page.locator("#documents li")).to_have_count(1)      # the CLI-ingested KB
    page.evaluate(WATCH_STATUS)
    page.select_option("#mode", "reflact")
    _ask(page, QUESTION)

    # A thinking indicator while the agent works; the trace fills in with readable labels.
    turn = page.locator(".turn").first
    expect(turn.locator(".thinking")).to_be_visible()
    trace = turn.locator(".trace")
    expect(trace.locator(".row.reflection b").first).to_have_text("Reflection")
    expect(trace.locator(".row.reflection").first).to_contain_text("Ich weiß noch nichts")
    expect(trace.locator(".row.action").first).to_contain_text(
        'rag_search("Öffnungszeiten DG Agentur")')
    expect(trace.locator(".row.observation").first).to_contain_text("9 bis 18 Uhr")
    expect(turn.locator(".answer-text")).to_have_text(ANSWER, timeout=30_000)
    expect(turn.locator(".thinking")).to_be_hidden()
    expect(trace.locator("details:not(.composition)")).to_have_count(2)   # the iterations
    expect(trace.locator("details.composition")).to_have_count(1)       # the answer check
    expect(turn.locator(".meta")).to_contain_text("reflact · 2 iteration(s)")
    statuses = page.evaluate("window.__statuses")
    assert "Searching the documents…" in statuses
    assert not [s for s in statuses if "_" in s], statuses      # no getting_action etc.
    # The streamed tokens went into no live region; the finished answer is announced once.
    assert page.locator("#messages [aria-live]").count() == 0
    expect(page.locator("#announcer")).to_have_text(ANSWER)

    # Only the cited source is listed; the other hit is behind "All retrieved".
    expect(turn.locator(".sources.cited li")).to_have_text(["Kontakt"])
    expect(turn.locator(".all-sources summary")).to_have_text("All retrieved (1 more)")
    expect(turn.locator(".all-sources")).not_to_have_attribute("open", "")

    # [1] is a link that opens the cited passage, highlighted among its neighbours.
    turn.locator(".answer-text a.cite").click()
    viewer = page.locator("#source-viewer")
    expect(viewer).to_be_visible()
    expect(viewer.locator("#viewer-title")).to_have_text("Kontakt")
    expect(viewer.locator(".passage.highlight")).to_contain_text("9 bis 18 Uhr")
    expect(viewer.locator(".passage")).to_have_count(2)
    page.keyboard.press("Escape")
    expect(viewer).to_be_hidden()

    # The iteration blocks collapse.
    first = trace.locator("details").first
    first.locator("summary").click()
    expect(first).not_to_have_attribute("open", "")

    # Rename, then export as Markdown and JSON (downloads through the API).
    page.once("dialog", lambda dialog: dialog.accept("Öffnungszeiten"))
    page.click("#rename-conversation")
    expect(page.locator("#conversations li button")).to_have_text(["Öffnungszeiten"])
    expect(page.locator("#conversation-title")).to_have_text("Öffnungszeiten")
    with page.expect_download() as md:
        page.click("#export-md")
    text = Path(md.value.path()).read_text(encoding="utf-8")
    assert text.startswith("# Öffnungszeiten") and ANSWER in text and "[1] Kontakt" in text
    with page.expect_download() as js:
        page.click("#export-json")
    exported = json.loads(Path(js.value.path()).read_text(encoding="utf-8"))
    assert exported["messages"][1]["content"] == ANSWER

    # A past conversation reopens with its stored trace and sources.
    page.click("#new-conversation")
    expect(page.locator(".turn")).to_have_count(0)
    expect(page.locator("#conversation-bar")).to_be_hidden()
    page.locator("#conversations li button").first.click()
    expect(page.locator(".turn .answer-text")).to_have_text(ANSWER)
    expect(page.locator(".turn .trace .row.action").first).to_contain_text("rag_search")
    expect(page.locator(".turn .sources.cited li")).to_have_text(["Kontakt"])

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
    _ask(page, "Und am Samstag?")
    follow = page.locator(".turn").nth(1)
    expect(follow.locator(".answer-text")).to_have_text(REFINED, timeout=30_000)
    review = follow.locator(".trace details", has_text="Reflection round 1")
    expect(review).to_contain_text("Critique (revise)")
    expect(review).to_contain_text("Der Samstag fehlt.")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "server_page.png"), full_page=True)

    # Delete asks first, then the conversation is gone.
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#delete-conversation")
    expect(page.locator("#conversations li")).to_have_count(0)
    expect(page.locator(".turn")).to_have_count(0)
    assert service.list_conversations("default") == []


def test_markdown_is_rendered_and_injection_attempts_are_sanitised(tmp_path, browser):
    script = [REFLACT_SCRIPT[0],
              "REFLECTION: Gefunden.\nFINAL ANSWER: Die DG Agentur hat **Montag bis Freitag** "
              "von 9 bis 18 Uhr geöffnet [1]."]
    service, server = _serve(tmp_path, script, delay=0)
    # A stored answer with injection attempts, whose sources came from the web: one with a
    # script address. Stored directly: a live answer holding them would not reach the page
    # (the answer composer drops a sentence no source supports), but what the store holds
    # (an older answer, another writer of the database) must be rendered safely too.
    injected = ("Siehe [1] und [2]. <script>window.pwned=1</script>"
                '<img src=x onerror="window.pwned=2"> [mehr](javascript:window.pwned=3)')
    bot = service.get_chatbot("default")
    conv = service.store.create_conversation(bot, "Web")
    service.store.add_message(conv.id, "user", "Was sagt das Web?")
    service.store.add_message(conv.id, "assistant", injected, sources=[
        {"title": "Böse Seite", "source": "javascript:window.pwned=4",
         "url": "javascript:window.pwned=4", "chunk_id": None, "index": 1, "cited": True},
        {"title": "Gute Seite", "source": "https://example.org/a", "url": "https://example.org/a",
         "chunk_id": None, "index": 2, "cited": True}])
    with server as url:
        page = browser.new_page()
        page.goto(url + "/")
        _ask(page, QUESTION)
        answer = page.locator(".turn .answer-text")
        expect(answer.locator("strong")).to_have_text("Montag bis Freitag", timeout=30_000)
        expect(answer.locator("a.cite")).to_have_text("1")

        page.locator("#conversations li button", has_text="Web").click()
        answer = page.locator(".turn .answer-text")
        expect(answer).to_contain_text("mehr")
        assert answer.locator("script, img[onerror], [onerror]").count() == 0
        assert page.locator("a[href^='javascript']").count() == 0
        assert page.evaluate("window.pwned") is None
        sources = page.locator(".turn .sources.cited li")
        expect(sources).to_have_count(2)
        expect(sources.nth(0).locator("a")).to_have_count(0)         # no link for javascript:
        expect(sources.nth(0)).to_contain_text("Böse Seite")
        expect(sources.nth(1).locator("a")).to_have_attribute("href", "https://example.org/a")
        page.locator(".turn .answer-text a.cite", has_text="1").click()
        assert page.evaluate("window.pwned") is None
        assert page.locator("a[href^='javascript']").count() == 0
        page.close()
    service.close()


def test_phone_width_dark_mode_drawer_and_keyboard(tmp_path, browser):
    service, server = _serve(tmp_path, REFLACT_SCRIPT, delay=0)
    with server as url:
        context = browser.new_context(viewport={"width": 390, "height": 844},
                                      color_scheme="dark", is_mobile=True, has_touch=True)
        page = context.new_page()
        page.goto(url + "/")
        expect(page.locator("#chatbot")).to_have_value("default")
        # The question box is on screen; the sidebar is a closed drawer.
        box = page.locator("#question").bounding_box()
        assert box and box["y"] + box["height"] <= 844 and box["x"] >= 0
        assert box["x"] + box["width"] <= 390
        expect(page.locator("#drawer")).not_to_be_in_viewport()
        expect(page.locator("label[for=question]")).to_have_text("Your question")
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(21, 24, 30)"
        assert page.evaluate("document.documentElement.scrollWidth") <= 390

        # Ask with the keyboard only.
        page.locator("#question").focus()
        page.keyboard.type(QUESTION)
        page.keyboard.press("Enter")
        expect(page.locator(".turn .answer-text")).to_have_text(ANSWER, timeout=30_000)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.screenshot(path=str(ARTIFACTS / "server_page_390_dark.png"))

        # Start over, then reach the conversation through the drawer by keyboard.
        page.locator("#menu-button").focus()
        page.keyboard.press("Enter")
        expect(page.locator("#drawer")).to_be_in_viewport(ratio=1)
        expect(page.locator("#menu-button")).to_have_attribute("aria-expanded", "true")
        page.keyboard.press("Enter")                    # focus is on "New conversation"
        expect(page.locator(".turn")).to_have_count(0)
        expect(page.locator("#drawer")).not_to_be_in_viewport()
        page.locator("#menu-button").focus()
        page.keyboard.press("Enter")
        expect(page.locator("#drawer")).to_be_in_viewport(ratio=1)
        for _ in range(15):
            if page.evaluate("document.activeElement.classList.contains('conversation')"):
                break
            page.keyboard.press("Tab")
        else:
            pytest.fail("no conversation in the drawer could be reached with Tab")
        page.screenshot(path=str(ARTIFACTS / "server_page_390_drawer.png"))
        page.keyboard.press("Enter")
        expect(page.locator(".turn .answer-text")).to_have_text(ANSWER)
        expect(page.locator("#drawer")).not_to_be_in_viewport()
        box = page.locator("#question").bounding_box()
        assert box and box["y"] + box["height"] <= 844
        context.close()
    service.close()


def test_with_api_keys_documents_open_with_the_stored_key(tmp_path, browser):
    service = make_service(tmp_path)
    service.update_chatbot("default", language="de")
    config = ServerConfig(admin_key="admin-Qq7", chat_key="chat-Ww3")
    (tmp_path / "preise.md").write_text("# Preise\n\nEine Beratung kostet 90 Euro.\n",
                                        encoding="utf-8")
    with live_server(service, config) as url:
        context = browser.new_context(accept_downloads=True)
        page = context.new_page()
        page.goto(url + "/")
        expect(page.locator("#status")).to_contain_text("needs an API key")
        page.once("dialog", lambda dialog: dialog.accept("admin-Qq7"))
        page.click("#key-button")
        expect(page.locator("#chatbot")).to_have_value("default")
        expect(page.locator("html")).to_have_attribute("lang", "de")

        page.locator("#documents-panel summary").click()
        page.set_input_files("#upload-files", str(tmp_path / "preise.md"))
        page.click("#upload-form button")
        expect(page.locator("#upload-message")).to_have_text(
            "Ingested: 1 added, 0 updated, 0 skipped.", timeout=20_000)
        expect(page.locator("#documents li")).to_have_text(["Kontakt (kontakt.md)",
                                                            "Preise (preise.md)"])
        # Opening a document sends the key (a plain link would get 401).
        page.locator("#documents li button", has_text="Preise").click()
        viewer = page.locator("#source-viewer")
        expect(viewer.locator(".passage")).to_contain_text("90 Euro")
        with page.expect_download() as download:
            page.click("#viewer-download")
        assert "90 Euro" in Path(download.value.path()).read_text(encoding="utf-8")
        page.click("#viewer-close")

        _ask(page, QUESTION)
        expect(page.locator(".turn .answer-text")).to_have_text(ANSWER, timeout=30_000)
        expect(page.locator(".turn .trace .row.reflection b").first).to_have_text("Reflexion")
        page.locator(".turn .sources.cited button").click()
        expect(viewer.locator(".passage.highlight")).to_contain_text("9 bis 18 Uhr")
        context.close()
    assert [d.name for d in (tmp_path / "data").glob("uploads/*/preise.md")] == ["preise.md"]
    service.close()
