"""The page's compare view in a real browser (Debian's chromium driven by playwright): the
"Compare" button answers one question with the chosen modes side by side, each lane with its
trace, answer, sources and costs, and a cost table under them; Stop ends every lane; on a
phone the lanes stack. Nothing is stored as a conversation. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import pytest

from server_support import ANSWER, REFLACT_SCRIPT, SlowScriptedModel, live_server, make_service
from test_server_browser import ARTIFACTS, QUESTION, browser, expect, pytestmark  # noqa: F401


class ParallelModel(SlowScriptedModel):
    parallel_calls = True          # like an HTTP backend: the lanes run side by side


def _service(tmp_path, delay, models=None):
    def factory():
        model = ParallelModel(REFLACT_SCRIPT, delay=delay)
        if models is not None:
            models.append(model)
        return model
    return make_service(tmp_path, model_factory=factory)


def _compare(page, modes):
    for box in page.locator("#compare-modes input").all():
        box.set_checked(box.get_attribute("value") in modes)
    page.fill("#question", QUESTION)
    page.click("#compare")


def test_compare_button_shows_the_modes_side_by_side_with_traces_and_costs(tmp_path, browser):
    service = _service(tmp_path, delay=0.01)
    with live_server(service) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(url + "/")
        expect(page.locator("#chatbot")).to_have_value("default")
        _compare(page, ["act", "reflact"])
        view = page.locator(".compare-turn")
        expect(view.locator(".question")).to_have_text(QUESTION)
        lanes = view.locator(".lane")
        expect(lanes.locator(".lane-title")).to_have_text(["ACT", "ReflAct"])
        for i in range(2):
            lane = lanes.nth(i)
            expect(lane.locator(".answer-text")).to_have_text(ANSWER, timeout=15_000)
            expect(lane.locator(".trace .row.action").first).to_contain_text(
                'rag_search("Öffnungszeiten DG Agentur")')
            expect(lane.locator(".trace .row.observation").first).to_contain_text("9 bis 18 Uhr")
            expect(lane.locator(".sources.cited li")).to_have_text(["Kontakt"])
            expect(lane.locator(".meta")).to_contain_text("2 iteration(s) · 2 LLM call(s)")
        expect(lanes.nth(1).locator(".trace .row.reflection").first).to_contain_text(
            "Ich weiß noch nichts")
        # Side by side: the lanes share a row.
        first, second = lanes.nth(0).bounding_box(), lanes.nth(1).bounding_box()
        assert abs(first["y"] - second["y"]) < 2 and second["x"] > first["x"] + first["width"]
        # The cost table: one row per mode, every figure filled in.
        table = view.locator("table.compare-costs")
        expect(table.locator("tr[data-lane]")).to_have_count(2)
        expect(table.locator("tr[data-lane=act] td").nth(1)).to_have_text("2")   # LLM calls
        expect(table.locator("td", has_text="…")).to_have_count(0)
        # A cited source opens in the viewer, as in a chat answer.
        lanes.nth(0).locator(".answer-text a.cite").click()
        expect(page.locator("#viewer-title")).to_have_text("Kontakt")
        page.keyboard.press("Escape")
        expect(page.locator("#send")).to_be_enabled()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "compare_view.png"), full_page=True)
        assert service.list_conversations("default") == []
        expect(page.locator("#conversations li")).to_have_count(0)

        # Fewer than two modes: no request, a hint instead.
        _compare(page, ["react"])
        expect(page.locator("#status")).to_have_text("Choose two or three modes to compare.")
        expect(page.locator(".compare-turn")).to_have_count(1)
        page.close()
    service.close()


def test_stop_ends_every_lane_and_phone_width_stacks_them(tmp_path, browser):
    models: list[ParallelModel] = []
    service = _service(tmp_path, delay=0.2, models=models)
    with live_server(service) as url:
        context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
        page = context.new_page()
        page.goto(url + "/")
        expect(page.locator("#chatbot")).to_have_value("default")
        _compare(page, ["act", "react", "reflact"])
        lanes = page.locator(".compare-turn .lane")
        expect(lanes).to_have_count(3)
        boxes = [lanes.nth(i).bounding_box() for i in range(3)]
        assert boxes[0]["y"] + boxes[0]["height"] <= boxes[1]["y"] + 1    # stacked
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        expect(page.locator("#stop")).to_be_enabled()
        expect(lanes.nth(0).locator(".trace .row").first).to_be_visible(timeout=15_000)
        page.click("#stop")
        expect(page.locator("#status")).to_have_text("Cancelled.")
        expect(page.locator("#compare")).to_be_enabled()
        for i in range(3):
            expect(lanes.nth(i).locator(".answer")).to_have_class("answer error")
        page.screenshot(path=str(ARTIFACTS / "compare_view_390.png"), full_page=True)
        context.close()
    deadline_ok = all(m.closed_early.wait(10) for m in models)
    assert len(models) == 3 and deadline_ok          # every lane's LLM request was closed
    service.close()
