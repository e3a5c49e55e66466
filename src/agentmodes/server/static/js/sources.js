// The sources under an answer: the cited ones, numbered as the answer cites them, and the
// rest of what was retrieved behind "All retrieved". Knowledge-base sources open the viewer;
// web sources link out, but only with an http(s) address.
import { el, safeHref } from "./dom.js";
import { openSource } from "./viewer.js";

const CITED = /\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/g;

export function citedNumbers(text) {
  const out = new Set();
  for (const m of (text || "").matchAll(CITED)) for (const n of m[1].split(",")) out.add(Number(n.trim()));
  return out;
}

// Sources keyed by the number answers cite them with.
export function numbered(sources) {
  const byNumber = new Map();
  (sources || []).forEach((src, i) => byNumber.set(Number(src.index ?? i + 1), src));
  return byNumber;
}

function item(chatbot, n, src) {
  const li = el("li");
  li.value = n;
  const name = (src.source || "").split(/[\\/]/).pop();
  const label = src.title || name || "source";
  const href = src.url ? safeHref(src.url) : null;
  let node;
  if (href) {
    node = Object.assign(el("a", "source-link", label), { href, target: "_blank", rel: "noopener noreferrer" });
  } else if (!src.url || src.chunk_id !== null && src.chunk_id !== undefined) {
    node = el("button", "source-link", label);
    node.type = "button";
    node.addEventListener("click", () => openSource(chatbot, src));
  } else {
    node = el("span", "source-link", label);      // a non-web address: shown, never a link
  }
  li.append(node);
  if (src.url && !href) li.append(el("span", "muted", " " + src.url));
  return li;
}

export function showSources(turn, chatbot, sources, answer) {
  const byNumber = numbered(sources);
  const flagged = [...byNumber.values()].some((s) => typeof s.cited === "boolean");
  const inText = citedNumbers(answer);
  const isCited = (n, s) => inText.has(n) || (flagged && s.cited === true);
  const cited = turn.node.querySelector(".sources.cited");
  const rest = turn.node.querySelector(".sources.retrieved");
  cited.replaceChildren();
  rest.replaceChildren();
  for (const [n, src] of byNumber) (isCited(n, src) ? cited : rest).append(item(chatbot, n, src));
  const all = turn.node.querySelector(".all-sources");
  all.hidden = !rest.children.length;
  all.querySelector("summary").textContent = `All retrieved (${rest.children.length} more)`;
  return byNumber;
}
