// One question and its answer on the page: the answer's Markdown, its citations and sources,
// the trace, the thinking indicator and the run's summary line.
import { $, el } from "./dom.js";
import { words } from "./labels.js";
import { linkCitations, renderMarkdown } from "./markdown.js";
import { showSources } from "./sources.js";
import { Trace } from "./trace.js";
import { openSource } from "./viewer.js";

let counter = 0;

export class Turn {
  constructor(question) {
    const node = $("turn-template").content.firstElementChild.cloneNode(true);
    node.id = `turn-${++counter}`;
    node.querySelector(".question").textContent = question;
    $("messages").append(node);
    this.node = node;
    this.answer = node.querySelector(".answer");
    this.text = node.querySelector(".answer-text");
    this.thinking = node.querySelector(".thinking");
    this.trace = new Trace(node.querySelector(".steps"));
    this.raw = "";
    this.pending = null;
  }

  // While a run goes on: "Thinking…" with what the agent is doing, until tokens arrive.
  think(label) {
    this.thinking.hidden = false;
    this.thinking.querySelector(".thinking-label").textContent = label || words().thinking;
    this.text.setAttribute("aria-busy", "true");
  }

  stopThinking() {
    this.thinking.hidden = true;
    this.text.removeAttribute("aria-busy");
  }

  // Streamed tokens: re-render at most every 80 ms, not once per token.
  appendToken(delta) {
    this.raw += delta;
    this.thinking.hidden = true;
    if (!this.pending) {
      this.pending = setTimeout(() => { this.pending = null; renderMarkdown(this.text, this.raw); }, 80);
    }
  }

  finish(chatbot, text, sources) {
    clearTimeout(this.pending);
    this.pending = null;
    this.raw = text ?? this.raw;
    this.stopThinking();
    renderMarkdown(this.text, this.raw);
    const byNumber = showSources(this, chatbot, sources, this.raw);
    linkCitations(this.text, (n) => byNumber.has(n), (n) => {
      const src = byNumber.get(n);
      if (src.url && (src.chunk_id === null || src.chunk_id === undefined)) {
        const item = [...this.node.querySelectorAll(".sources li")].find((li) => li.value === n);
        const link = item && item.querySelector("a");
        if (link) link.click(); else if (item) item.scrollIntoView({ block: "nearest" });
      } else {
        openSource(chatbot, src);
      }
    });
  }

  fail(message, status) {
    this.stopThinking();
    this.answer.classList.add(status || "error");
    if (message) this.text.textContent = message;
  }

  meta(info, usage) {
    const parts = [];
    if (info && info.mode) parts.push(info.mode);
    if (info && info.iterations !== undefined) parts.push(info.iterations + " iteration(s)");
    if (info && info.adaptive_exit) parts.push("adaptive exit");
    if (usage) parts.push((usage.prompt_tokens || 0) + (usage.completion_tokens || 0) + " tokens");
    this.node.querySelector(".meta").textContent = parts.join(" · ");
  }
}

export function plainText(turn) {
  return turn.text.textContent.replace(/\s+/g, " ").trim();
}

export function clearTurns() { $("messages").replaceChildren(); }

export function emptyHint(text) { $("messages").replaceChildren(el("p", "muted hint", text)); }
