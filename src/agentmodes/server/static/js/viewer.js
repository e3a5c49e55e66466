// The source viewer: a dialog that shows a cited passage highlighted among its neighbours in
// its document (not a download), with the rest of the document a click away.
import { api, download, enc } from "./api.js";
import { $, el } from "./dom.js";

const view = { chatbot: null, doc: null, highlight: null };

function showPassages(payload, highlight) {
  const box = $("viewer-passages");
  box.replaceChildren(...payload.passages.map((p) => {
    const node = el("div", "passage" + (p.chunk_id === highlight ? " highlight" : ""));
    const path = (p.heading_path || []).filter((h) => h && h !== payload.title);
    if (path.length) node.append(el("div", "heading", path.join(" › ")));
    node.append(el("div", "passage-text", p.text));
    if (p.chunk_id === highlight) node.setAttribute("aria-current", "true");
    return node;
  }));
  const more = payload.passages.length < payload.chunks;
  $("viewer-more").hidden = !more;
  const current = box.querySelector(".highlight");
  if (current) current.scrollIntoView({ block: "center" });
}

function open(payload, highlight, where) {
  view.doc = payload;
  view.highlight = highlight;
  $("viewer-title").textContent = payload.title || payload.name || "Source";
  $("viewer-where").textContent = where || payload.name || "";
  $("viewer-download").hidden = !payload.upload;
  showPassages(payload, highlight);
  const dialog = $("source-viewer");
  if (!dialog.open) dialog.showModal();
}

// A stored source that the KB no longer has (re-ingested, deleted): show what the answer saw.
function openStored(source, reason) {
  open({ title: source.title, name: source.source ? source.source.split(/[\\/]/).pop() : "",
         chunks: 1, upload: null, passages: [{ chunk_id: -1, text: source.text || "", heading_path: [] }] },
       -1, reason);
}

export async function openSource(chatbot, source) {
  view.chatbot = chatbot;
  if (source.chunk_id === null || source.chunk_id === undefined) { openStored(source, ""); return; }
  try {
    const payload = await api(`/api/chatbots/${enc(chatbot)}/kb/passages/${source.chunk_id}?context=3`);
    open(payload, source.chunk_id, payload.name);
  } catch (err) {
    openStored(source, `As cited at the time; the document has changed since (${err.message}).`);
  }
}

export async function openDocument(chatbot, docId) {
  view.chatbot = chatbot;
  const payload = await api(`/api/chatbots/${enc(chatbot)}/kb/documents/${docId}?limit=200`);
  open(payload, null, payload.name);
}

async function showMore() {
  const doc = view.doc;
  const payload = await api(`/api/chatbots/${enc(view.chatbot)}/kb/documents/${doc.id}?limit=500`);
  showPassages(payload, view.highlight);
}

export function setupViewer() {
  const dialog = $("source-viewer");
  $("viewer-close").addEventListener("click", () => dialog.close());
  $("viewer-more").addEventListener("click", () => showMore().catch((err) => { $("viewer-where").textContent = err.message; }));
  $("viewer-download").addEventListener("click", () => {
    const name = view.doc.upload;
    download(`/api/chatbots/${enc(view.chatbot)}/documents/${enc(name)}`, name)
      .catch((err) => { $("viewer-where").textContent = err.message; });
  });
  // A click on the backdrop (outside the dialog's box) closes it too.
  dialog.addEventListener("click", (event) => { if (event.target === dialog) dialog.close(); });
}
