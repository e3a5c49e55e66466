// The conversation list (keyboard-reachable buttons) and the open conversation's actions:
// rename, delete, export as Markdown or JSON.
import { api, download, enc } from "./api.js";
import { $, el } from "./dom.js";
import { session } from "./chat.js";
import { clearTurns, Turn } from "./turns.js";

export async function loadConversations() {
  if (!session.chatbot) return;
  const list = await api(`/api/conversations?chatbot=${enc(session.chatbot)}`);
  $("conversations").replaceChildren(...list.map((c) => {
    const item = el("li", c.id === session.conversation ? "active" : "");
    const button = el("button", "conversation", c.title || "(untitled)");
    button.type = "button";
    button.title = `${c.title} — ${c.message_count} messages`;
    if (c.id === session.conversation) button.setAttribute("aria-current", "true");
    button.addEventListener("click", () => openConversation(c.id));
    item.append(button);
    return item;
  }));
  showBar(list.find((c) => c.id === session.conversation));
}

function showBar(conv) {
  $("conversation-bar").hidden = !conv;
  if (conv) $("conversation-title").textContent = conv.title || "(untitled)";
}

export async function openConversation(id) {
  const conv = await api(`/api/conversations/${enc(id)}`);
  session.conversation = id;
  clearTurns();
  let turn = null;
  for (const m of conv.messages) {
    if (m.role === "user") { turn = new Turn(m.content); continue; }
    if (!turn) turn = new Turn("");
    for (const event of (m.agent_trace && m.agent_trace.events) || []) turn.trace.apply(event);
    turn.finish(session.chatbot, m.content, m.sources);
    if (m.status !== "complete") turn.fail(m.status === "error" ? m.error : "", m.status);
    turn.meta(m.stream_metadata, m.usage);
    turn = null;
  }
  await loadConversations();
  document.dispatchEvent(new CustomEvent("conversation-opened"));
}

export function newConversation() {
  session.conversation = null;
  clearTurns();
  return loadConversations();
}

async function rename() {
  const current = $("conversation-title").textContent;
  const title = prompt("New title for this conversation:", current);
  if (title === null || !title.trim()) return;
  await api(`/api/conversations/${enc(session.conversation)}`,
            { method: "PATCH", body: JSON.stringify({ title: title.trim() }) });
  await loadConversations();
}

async function remove() {
  if (!confirm("Delete this conversation and its answers? This cannot be undone.")) return;
  await api(`/api/conversations/${enc(session.conversation)}`, { method: "DELETE" });
  await newConversation();
}

function exporter(format) {
  return () => download(`/api/conversations/${enc(session.conversation)}/export?format=${format}`,
                        `conversation.${format}`);
}

export function setupConversations(report) {
  const guard = (action) => () => action().catch((err) => report(err.message));
  $("rename-conversation").addEventListener("click", guard(rename));
  $("delete-conversation").addEventListener("click", guard(remove));
  $("export-md").addEventListener("click", guard(exporter("md")));
  $("export-json").addEventListener("click", guard(exporter("json")));
}
