// Small DOM helpers shared by the page's modules.
export const $ = (id) => document.getElementById(id);

export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

// Only web addresses become links: a source's `url` comes from a web search or a document and
// may say `javascript:` or `data:`; those stay text.
export function safeHref(url) {
  if (typeof url !== "string" || !url.trim()) return null;
  try {
    const parsed = new URL(url.trim(), location.href);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch { return null; }
}

// Screen readers hear finished answers, not every streamed token: one polite message each.
export function announce(text) {
  const region = $("announcer");
  region.textContent = "";
  setTimeout(() => { region.textContent = text; }, 50);
}
