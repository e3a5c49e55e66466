// The agent's trace beside the answer: one collapsible block per iteration (or Reflection
// round) with reasoning, action and observation rows. The same class renders a live run and
// a stored message's agent_trace.events.
import { el } from "./dom.js";
import { words } from "./labels.js";

const REASONING = ["reflection", "thought"];
const ROUND_STEPS = ["critique", "refinement", "evaluation"];
const QUIET = ["starting", "getting_action", "reflecting"];

export class Trace {
  constructor(container) { this.container = container; this.blocks = {}; this.current = 0; }

  block(iteration) {
    // Step-mode iterations are numbers; Reflection rounds are keys like "round 1".
    const n = typeof iteration === "string" ? iteration : (iteration || this.current || 0);
    if (typeof n === "number") this.current = Math.max(this.current, n);
    if (!this.blocks[n]) {
      const w = words();
      const details = el("details");
      details.open = true;
      const title = typeof n === "string" ? `${w.round} ${n.replace("round ", "")}` : (n ? `${w.iteration} ${n}` : w.run);
      details.append(el("summary", null, title));
      this.container.append(details);
      this.blocks[n] = { details, rows: {} };
    }
    return this.blocks[n];
  }

  row(iteration, kind, label) {
    const block = this.block(iteration);
    if (!block.rows[kind]) {
      const row = el("div", "row " + kind);
      row.append(el("b", null, label), el("span"));
      block.details.append(row);
      block.rows[kind] = row.lastChild;
    }
    return block.rows[kind];
  }

  note(iteration, text) { this.block(iteration).details.append(el("div", "row note", text)); }

  apply(event) {
    const s = event.status, it = event.iteration, w = words();
    if (!s) return;
    if (event.round !== undefined && ROUND_STEPS.includes(s)) {
      const label = s === "critique" ? `${w.critique} (${event.verdict || "?"})` : w[s];
      this.row("round " + event.round, s === "critique" ? "thought" : "reflection", label)
        .textContent = event.content || event.feedback || "";
      return;
    }
    if (s === "iteration") { this.block(it); return; }
    const kind = s.replace("_delta", "");
    if (s === "reflection_delta" || s === "thought_delta") {
      this.row(it, kind, w[kind]).textContent += event.delta || "";
    } else if (REASONING.includes(s)) {
      this.row(it, s, w[s]).textContent = event[s] || "";
    } else if (s === "action_delta" || s === "observation_delta") {
      this.row(it, kind, w[kind]).textContent += event.delta || "";
    } else if (s === "action") {
      this.row(it, "action", w.action).textContent = `${event.action}("${event.param ?? ""}")`;
    } else if (s === "observation") {
      this.row(it, "observation", w.observation).textContent = event.result_preview || "";
    } else if (s === "adaptive_iteration" || s === "adaptive_response") {
      this.note(it, w.adaptive + (event.reason ? ` (${event.reason.replace(/_/g, " ")})` : ""));
    } else if (s === "final_answer") {
      this.note(it, w.final_answer + (event.reason ? ` (${event.reason.replace(/_/g, " ")})` : ""));
    } else if (s === "error") {
      this.note(it, `${w.error}: ${event.message}`);
    } else if (!QUIET.includes(s)) {
      // Reflexion and other steps (trial, draft, self_reflection, memory, parse_error...):
      // their readable name and whatever text they carry.
      const text = Object.entries(event)
        .filter(([k, v]) => typeof v === "string" && !["status", "mode"].includes(k))
        .map(([, v]) => v).join(" — ");
      const name = w[s] || s.replace(/_/g, " ");
      this.note(it, name + (event.trial !== undefined ? ` ${event.trial}` : "") + (text ? ": " + text : ""));
    }
  }
}
