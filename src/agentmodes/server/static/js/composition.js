// How the answer was checked (modes/compose.py's `composition` in the done event): whether it
// was extracted from the sources, and which of the model's statements were dropped and why.
// Shown as a block of the trace, so the answer itself stays what the user reads.
import { el } from "./dom.js";
import { words } from "./labels.js";

export function showComposition(turn, done) {
  const comp = done && done.composition;
  if (!comp || typeof comp !== "object") return;
  const w = words();
  const block = el("details", "composition");
  block.append(el("summary", null, w.checked));
  if (comp.extractive) block.append(el("div", "row note", w.extractive));
  const statements = Array.isArray(comp.statements) ? comp.statements : [];
  for (const s of statements) {
    const row = el("div", "row statement " + (s.origin === "extracted" ? "extracted" : "model"));
    row.append(el("b", null, s.origin === "extracted" ? w.from_sources : w.from_model),
               el("span", null, s.text));
    block.append(row);
  }
  for (const d of Array.isArray(comp.dropped) ? comp.dropped : []) {
    const row = el("div", "row dropped");
    row.append(el("b", null, `${w.dropped} (${String(d.reason || "").replace(/_/g, " ")})`),
               el("span", null, d.text || ""));
    block.append(row);
  }
  if (block.children.length > 1) turn.trace.container.append(block);
  if (comp.extractive) turn.answer.classList.add("extractive");
}
