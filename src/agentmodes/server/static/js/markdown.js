// Answers are Markdown: rendered by markdown-it, sanitised by DOMPurify (raw HTML is off in
// markdown-it as well, so a model or a document cannot inject script), then every [n] becomes
// a link to its source.
import markdownit from "../vendor/markdown-it.min.js";
import DOMPurify from "../vendor/purify.es.js";

const md = markdownit({ html: false, linkify: true, breaks: true });
const CITATION = /\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/g;
const HAS_CITATION = new RegExp(CITATION.source);   // no /g: test() keeps no state

// Links in an answer open outside the page, and never with a script scheme.
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.getAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

export function renderMarkdown(container, text) {
  const html = DOMPurify.sanitize(md.render(text || ""), { ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i });
  container.innerHTML = html;
}

// Replace "[1]" and "[1, 2]" in text nodes (not inside code or links) with citation links.
// `known(n)` says whether source n exists; `open(n)` shows it.
export function linkCitations(container, known, open) {
  const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.parentElement.closest("code, pre, a") ? NodeFilter.FILTER_REJECT
      : HAS_CITATION.test(node.nodeValue) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP),
  });
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const parts = [];
    let last = 0;
    for (const m of node.nodeValue.matchAll(CITATION)) {
      parts.push(document.createTextNode(node.nodeValue.slice(last, m.index)));
      const group = document.createElement("span");
      group.className = "citation";
      group.append("[");
      m[1].split(",").map((s) => Number(s.trim())).forEach((n, i) => {
        if (i) group.append(", ");
        if (!known(n)) { group.append(String(n)); return; }
        const link = document.createElement("a");
        link.href = "#";
        link.className = "cite";
        link.dataset.source = String(n);
        link.textContent = String(n);
        link.setAttribute("aria-label", `source ${n}`);
        link.addEventListener("click", (event) => { event.preventDefault(); open(n); });
        group.append(link);
      });
      group.append("]");
      parts.push(group);
      last = m.index + m[0].length;
    }
    parts.push(document.createTextNode(node.nodeValue.slice(last)));
    node.replaceWith(...parts);
  }
}
