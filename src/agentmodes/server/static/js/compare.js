// Compare: the same question answered by two or three modes side by side, each lane with its
// answer, sources, trace and costs, and a table of the costs under the lanes. The frames come
// from POST /api/chatbots/{name}/compare as Server-Sent Events: {lane, event} for each event of
// a mode's run, {lane, figures} when it has finished (the server adds its figures up from the
// events), {lane, error}, and {compare_done} last. Nothing is stored as a conversation.
import { enc, request } from "./api.js";
import { $, announce, el } from "./dom.js";
import { activity, words } from "./labels.js";
import { linkCitations, renderMarkdown } from "./markdown.js";
import { showSources } from "./sources.js";
import { Trace } from "./trace.js";
import { openSource } from "./viewer.js";

const LABELS = { act: "ACT", react: "ReAct", reflact: "ReflAct", "plan-and-solve": "Plan-and-Solve" };
// The cost table's columns: [figures key, heading, format].
const COLUMNS = [
  ["iterations", "iterations", String], ["llm_calls", "LLM calls", String],
  ["prompt_tokens", "prompt tokens", String], ["completion_tokens", "completion tokens", String],
  ["tokens_per_step", "tokens/step", (v) => Math.round(v).toString()],
  ["wall_s", "time (s)", (v) => v.toFixed(2)],
  ["adaptive_exit", "adaptive exit", (v) => (v ? "yes" : "no")],
  ["parse_errors", "parse errors", String],
  ["sources_cited", "cited", String],
];

const state = { running: null, chatbot: () => null };

function label(lane) {
  const [mode, extra] = lane.split("+");
  return (LABELS[mode] || mode) + (extra ? " + Reflection" : "");
}

class Lane {
  constructor(name, container) {
    this.name = name;
    const node = $("turn-template").content.querySelector(".exchange").cloneNode(true);
    this.node = el("section", "lane");
    this.node.dataset.lane = name;
    this.node.setAttribute("aria-label", label(name));
    this.node.append(el("h3", "lane-title", label(name)), node);
    container.append(this.node);
    this.text = node.querySelector(".answer-text");
    this.thinking = node.querySelector(".thinking");
    this.trace = new Trace(node.querySelector(".steps"));
    this.raw = "";
    this.thinking.hidden = false;
  }

  apply(event, chatbot) {
    if ("delta" in event && !event.status) {
      this.raw += String(event.delta);
      this.thinking.hidden = true;
      renderMarkdown(this.text, this.raw);
    } else if (event.done) {
      this.raw = event.full_response ?? this.raw;
      this.thinking.hidden = true;
      renderMarkdown(this.text, this.raw);
      const byNumber = showSources(this, chatbot, event.sources, this.raw);
      linkCitations(this.text, (n) => byNumber.has(n), (n) => openSource(chatbot, byNumber.get(n)));
    } else if (event.status) {
      this.trace.apply(event);
      if (!this.raw) this.thinking.querySelector(".thinking-label").textContent = activity(event) + "…";
    }
  }

  costs(figures) {
    const parts = [`${figures.iterations} iteration(s)`, `${figures.llm_calls} LLM call(s)`,
      `${figures.prompt_tokens}+${figures.completion_tokens} tokens`, `${figures.wall_s.toFixed(1)} s`];
    if (figures.adaptive_exit) parts.push("adaptive exit");
    if (figures.parse_errors) parts.push(`${figures.parse_errors} parse error(s)`);
    this.node.querySelector(".meta").textContent = parts.join(" · ");
  }

  fail(message) {
    this.thinking.hidden = true;
    this.node.querySelector(".answer").classList.add("error");
    this.text.textContent = message;
  }
}

function costTable(lanes, figures) {
  const table = el("table", "compare-costs");
  table.append(el("caption", null, "Costs side by side"));
  const head = el("tr");
  head.append(el("th", null, "mode"), ...COLUMNS.map(([, heading]) => el("th", null, heading)));
  table.append(head);
  for (const name of lanes) {
    const row = el("tr");
    row.dataset.lane = name;
    const f = figures[name];
    row.append(el("th", null, label(name)),
      ...COLUMNS.map(([key, , fmt]) => el("td", null, f ? fmt(f[key]) : "…")));
    table.append(row);
  }
  return table;
}

function chosenModes() {
  return [...document.querySelectorAll("#compare-modes input:checked")].map((box) => box.value);
}

// Read a text/event-stream response frame by frame.
async function* frames(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const data = buffer.slice(0, cut).split("\n").filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trimStart()).join("\n");
      buffer = buffer.slice(cut + 2);
      if (data) yield JSON.parse(data);
    }
    if (done) return;
  }
}

function setBusy(busy) {
  $("send").disabled = busy;
  $("compare").disabled = busy;
  $("stop").disabled = !busy;
}

export async function compare(question, setStatus) {
  const chatbot = state.chatbot();
  const modes = chosenModes();
  if (modes.length < 2) { setStatus("Choose two or three modes to compare."); return; }
  const view = el("article", "turn compare-turn");
  view.append(el("div", "question", question));
  const grid = el("div", "lanes");
  grid.style.setProperty("--lanes", String(modes.length));
  view.append(grid);
  $("messages").append(view);
  const reflect = Number($("reflect").value) || 0;
  const names = modes.map((m) => m + (reflect ? "+reflection" : ""));
  const lanes = Object.fromEntries(names.map((n) => [n, new Lane(n, grid)]));
  const figures = {};
  let table = costTable(names, figures);
  const wrap = el("div", "costs-wrap");           // scrolls sideways on a phone, by keyboard too
  Object.assign(wrap, { tabIndex: 0, role: "region" });
  wrap.setAttribute("aria-label", "Costs side by side");
  wrap.append(table);
  view.append(wrap);
  const abort = new AbortController();
  state.running = abort;
  setBusy(true);
  setStatus(words().thinking);
  try {
    const response = await request(`/api/chatbots/${enc(chatbot)}/compare`, {
      method: "POST", body: JSON.stringify({ message: question, modes, reflect }), signal: abort.signal });
    for await (const frame of frames(response)) {
      const lane = lanes[frame.lane];
      if (frame.compare_done) break;
      if (!lane) continue;
      if (frame.event) {
        lane.apply(frame.event, chatbot);
        if (frame.event.status) setStatus(`${label(frame.lane)}: ${activity(frame.event)}…`);
      } else if (frame.figures) {
        figures[frame.lane] = frame.figures;
        lane.costs(frame.figures);
        const next = costTable(names, figures);
        table.replaceWith(next);
        table = next;
      } else if (frame.error) {
        lane.fail(frame.error);
      }
    }
    setStatus("");
    announce(`Compared ${names.map(label).join(", ")}.`);
  } catch (err) {
    const message = abort.signal.aborted ? "Cancelled." : err.message;
    for (const lane of Object.values(lanes)) if (!lane.raw) lane.fail(message);
    setStatus(message);
  } finally {
    state.running = null;
    setBusy(false);
  }
  view.scrollIntoView({ block: "end" });
}

export function setupCompare(chatbot, setStatus) {
  state.chatbot = chatbot;
  $("compare").addEventListener("click", () => {
    const question = $("question").value.trim();
    if (!question || state.running || !chatbot()) return;
    $("question").value = "";
    compare(question, setStatus);
  });
  $("stop").addEventListener("click", () => { if (state.running) state.running.abort(); });
}
