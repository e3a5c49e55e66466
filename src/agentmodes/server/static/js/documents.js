// The Documents panel: everything in the chatbot's knowledge base (CLI-ingested or uploaded),
// each opening the viewer, and the upload form with its ingest progress.
import { api, enc } from "./api.js";
import { $, el } from "./dom.js";
import { session } from "./chat.js";
import { openDocument } from "./viewer.js";

export async function loadDocuments() {
  const docs = await api(`/api/chatbots/${enc(session.chatbot)}/kb/documents`);
  $("documents").replaceChildren(...docs.map((d) => {
    const button = el("button", "document", d.title && d.title !== d.name ? `${d.title} (${d.name})` : d.name);
    button.type = "button";
    button.title = `${d.chunks} passages, ${d.size} bytes`;
    button.addEventListener("click", () => openDocument(session.chatbot, d.id));
    const item = el("li");
    item.append(button);
    return item;
  }));
  if (!docs.length) $("documents").append(el("li", "muted", "No documents yet."));
}

async function upload(event) {
  event.preventDefault();
  const message = $("upload-message");
  const files = $("upload-files").files;
  if (!files.length) return;
  const form = new FormData();
  for (const file of files) form.append("files", file);
  try {
    let job = await api(`/api/chatbots/${enc(session.chatbot)}/documents`, { method: "POST", body: form });
    while (job.status === "queued" || job.status === "running") {
      const p = job.progress || {};
      message.textContent = `Ingesting… ${p.phase || ""} ${p.done ?? 0}/${p.total ?? "?"}`;
      await new Promise((resolve) => setTimeout(resolve, 400));
      job = await api(`/api/jobs/${enc(job.id)}`);
    }
    const report = job.report || {};
    message.textContent = job.status === "done"
      ? `Ingested: ${(report.added || []).length} added, ${(report.updated || []).length} updated, ${(report.skipped || []).length} skipped.`
      : "Ingest failed: " + job.error;
    $("upload-files").value = "";
    await loadDocuments();
  } catch (err) {
    message.textContent = "Not uploaded: " + err.message;
  }
}

export function setupDocuments() { $("upload-form").addEventListener("submit", upload); }
