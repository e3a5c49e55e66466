// agentmodes web page: ES modules, no build step. This module wires the page together; the
// others each do one job (api, chat, turns, trace, sources, viewer, conversations, documents).
import { api, enc, setApiKey, apiKey } from "./api.js";
import { $ } from "./dom.js";
import { ask, cancel, closeSocket, session } from "./chat.js";
import { loadConversations, newConversation, openConversation, setupConversations } from "./conversations.js";
import { loadDocuments, setupDocuments } from "./documents.js";
import { clearTurns } from "./turns.js";
import { setupCompare } from "./compare.js";
import { setupViewer } from "./viewer.js";

function setStatus(text) { $("status").textContent = text; }

// ---- drawer (conversations, settings, upload) on narrow screens ----------------------------
const narrow = window.matchMedia("(max-width: 900px)");

function setDrawer(open) {
  document.body.classList.toggle("drawer-open", open);
  $("menu-button").setAttribute("aria-expanded", String(open));
  $("backdrop").hidden = !open;
  // Behind an open drawer the page cannot be reached (Tab stays in the drawer).
  document.querySelector("main").inert = open && narrow.matches;
  if (open) $("new-conversation").focus();
  else if (narrow.matches) $("menu-button").focus();
}

function closeDrawerOnNarrow() { if (narrow.matches && document.body.classList.contains("drawer-open")) setDrawer(false); }

// ---- chatbots and settings -----------------------------------------------------------------
async function loadChatbots() {
  const bots = await api("/api/chatbots");
  const select = $("chatbot");
  select.replaceChildren(...bots.map((b) => Object.assign(document.createElement("option"), { value: b.name, textContent: b.name })));
  const wanted = localStorage.getItem("agentmodes-chatbot");
  if (bots.some((b) => b.name === wanted)) select.value = wanted;
  await selectChatbot(select.value);
}

async function selectChatbot(name) {
  session.chatbot = name || null;
  session.conversation = null;
  clearTurns();
  if (!name) { setStatus("No chatbot yet: create one with POST /api/chatbots."); return; }
  localStorage.setItem("agentmodes-chatbot", name);
  const bot = await api(`/api/chatbots/${enc(name)}`);
  // The page speaks the chatbot's language (screen readers, hyphenation, labels).
  const lang = bot.settings.language || bot.language;
  document.documentElement.lang = lang && lang !== "auto" ? lang : "en";
  $("settings-json").value = JSON.stringify(bot.settings, null, 2);
  await Promise.all([loadConversations(), loadDocuments()]);
}

async function saveSettings(event) {
  event.preventDefault();
  const message = $("settings-message");
  try {
    const settings = JSON.parse($("settings-json").value);
    const bot = await api(`/api/chatbots/${enc(session.chatbot)}`, { method: "PATCH", body: JSON.stringify({ settings }) });
    $("settings-json").value = JSON.stringify(bot.settings, null, 2);
    message.textContent = "Saved.";
  } catch (err) {
    message.textContent = "Not saved: " + err.message;
  }
}

// ---- wiring --------------------------------------------------------------------------------
session.onFinished = () => loadConversations().catch((err) => setStatus(err.message));

$("ask-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question || session.running) return;
  $("question").value = "";
  ask(question);
});
$("question").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); $("ask-form").requestSubmit(); }
});
$("stop").addEventListener("click", cancel);
$("chatbot").addEventListener("change", (event) => selectChatbot(event.target.value).catch((err) => setStatus(err.message)));
$("new-conversation").addEventListener("click", () => { newConversation(); closeDrawerOnNarrow(); $("question").focus(); });
$("settings-form").addEventListener("submit", saveSettings);
$("key-button").addEventListener("click", () => {
  const key = prompt("API key for this server (stored in this browser only):", apiKey());
  if (key === null) return;
  setApiKey(key);
  closeSocket();
  loadChatbots().catch((err) => setStatus(err.message));
});
$("menu-button").addEventListener("click", () => setDrawer(!document.body.classList.contains("drawer-open")));
$("close-drawer").addEventListener("click", () => setDrawer(false));
$("backdrop").addEventListener("click", () => setDrawer(false));
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && document.body.classList.contains("drawer-open") && !$("source-viewer").open) setDrawer(false);
});
document.addEventListener("conversation-opened", closeDrawerOnNarrow);
setupConversations(setStatus);
setupDocuments();
setupViewer();
setupCompare(() => session.chatbot, setStatus);

loadChatbots().catch((err) => setStatus(err.message));
export { openConversation };
