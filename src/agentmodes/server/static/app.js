// agentmodes web page: plain JS, no build step. One WebSocket streams the seed events; the
// same Trace class renders a live run and a stored message's agent_trace.events.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { chatbot: null, conversation: null, ws: null, running: null, authSent: false };

function apiKey() { return localStorage.getItem("agentmodes-key") || ""; }

async function api(path, options = {}) {
  // FormData sets its own multipart Content-Type (with the boundary).
  const json = !(options.body instanceof FormData);
  const headers = Object.assign(json ? { "Content-Type": "application/json" } : {}, options.headers || {});
  if (apiKey()) headers.Authorization = "Bearer " + apiKey();
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (response.status === 401) throw new Error("This server needs an API key: use the API key button.");
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    throw new Error(body.detail || response.statusText);
  }
  return response.status === 204 ? null : response.json();
}

function setStatus(text) { $("status").textContent = text; }

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

// ---- trace ------------------------------------------------------------------------------
const REASONING = { reflection: "Reflection", thought: "Thought" };

class Trace {
  constructor(container) { this.container = container; this.blocks = {}; this.current = 0; }

  block(iteration) {
    // Step-mode iterations are numbers; Reflection rounds are keys like "round 1".
    const n = typeof iteration === "string" ? iteration : (iteration || this.current || 0);
    if (typeof n === "number") this.current = Math.max(this.current, n);
    if (!this.blocks[n]) {
      const details = el("details");
      details.open = true;
      const title = typeof n === "string" ? "Reflection " + n : (n ? "Iteration " + n : "Run");
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
    const s = event.status, it = event.iteration;
    if (!s) return;
    if (event.round !== undefined && ["critique", "refinement", "evaluation"].includes(s)) {
      const label = s === "critique" ? `Critique (${event.verdict || "?"})` : s[0].toUpperCase() + s.slice(1);
      this.row("round " + event.round, s === "critique" ? "thought" : "reflection", label)
        .textContent = event.content || event.feedback || "";
      return;
    }
    if (s === "iteration") { this.block(it); return; }
    if (s === "reflection_delta" || s === "thought_delta") {
      const kind = s.replace("_delta", "");
      this.row(it, kind, REASONING[kind]).textContent += event.delta || "";
    } else if (s === "reflection" || s === "thought") {
      this.row(it, s, REASONING[s]).textContent = event[s] || "";
    } else if (s === "action_delta") {
      this.row(it, "action", "Action").textContent += event.delta || "";
    } else if (s === "action") {
      this.row(it, "action", "Action").textContent = `${event.action}("${event.param ?? ""}")`;
    } else if (s === "observation_delta") {
      this.row(it, "observation", "Observation").textContent += event.delta || "";
    } else if (s === "observation") {
      this.row(it, "observation", "Observation").textContent = event.result_preview || "";
    } else if (s === "adaptive_iteration" || s === "adaptive_response") {
      this.note(it, "Adaptive exit: " + (event.reason || "high confidence"));
    } else if (s === "max_iterations_reached") {
      this.note(it, "Iteration limit reached; answering with what was found.");
    } else if (s === "final_answer") {
      this.note(it, "Final answer" + (event.reason ? " (" + event.reason.replace(/_/g, " ") + ")" : ""));
    } else if (s === "error") {
      this.note(it, "Error: " + event.message);
    } else if (!["starting", "getting_action", "reflecting"].includes(s)) {
      // Reflection/Reflexion steps (draft, critique, trial, evaluation, ...): show their text.
      const text = Object.entries(event).filter(([k, v]) => typeof v === "string" && k !== "status")
        .map(([, v]) => v).join(" — ");
      this.note(it, s + (text ? ": " + text : ""));
    }
  }
}

// ---- turns ------------------------------------------------------------------------------
function newTurn(question) {
  const node = $("turn-template").content.firstElementChild.cloneNode(true);
  node.querySelector(".question").textContent = question;
  $("messages").append(node);
  return {
    node, answer: node.querySelector(".answer"), text: node.querySelector(".answer-text"),
    trace: new Trace(node.querySelector(".steps")),
  };
}

function showSources(turn, sources) {
  const list = turn.node.querySelector(".sources");
  list.replaceChildren();
  for (const src of sources || []) {
    const item = el("li");
    const name = (src.source || "").split(/[\\/]/).pop();
    const href = src.url || (name ? `/api/chatbots/${encodeURIComponent(state.chatbot)}/documents/${encodeURIComponent(name)}` : null);
    const link = el(href ? "a" : "span", null, src.title || name || "source");
    if (href) { link.href = href; link.target = "_blank"; link.rel = "noopener"; }
    item.append(link);
    list.append(item);
  }
}

function showMeta(turn, meta, usage) {
  const parts = [];
  if (meta && meta.mode) parts.push(meta.mode);
  if (meta && meta.iterations !== undefined) parts.push(meta.iterations + " iteration(s)");
  if (meta && meta.adaptive_exit) parts.push("adaptive exit");
  if (usage) parts.push((usage.prompt_tokens || 0) + (usage.completion_tokens || 0) + " tokens");
  turn.node.querySelector(".meta").textContent = parts.join(" · ");
}

// ---- streaming --------------------------------------------------------------------------
function socket() {
  if (state.ws && state.ws.readyState <= 1) return Promise.resolve(state.ws);
  return new Promise((resolve, reject) => {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${scheme}://${location.host}/api/ws`);
    state.authSent = false;
    ws.onopen = () => { state.ws = ws; resolve(ws); };
    ws.onerror = () => reject(new Error("WebSocket connection failed"));
    ws.onmessage = (message) => onEvent(JSON.parse(message.data));
    ws.onclose = () => { if (state.running) finish("Connection closed."); state.ws = null; };
  });
}

function onEvent(event) {
  const turn = state.running;
  if (!turn) return;
  if ("delta" in event && !event.status) {
    turn.text.textContent += event.delta;
  } else if (event.done) {
    turn.text.textContent = event.full_response ?? turn.text.textContent;
    showSources(turn, event.sources);
    showMeta(turn, { mode: event.mode, iterations: turn.trace.current }, event.usage);
    if (!state.conversation) { state.conversation = event.conversation_id; }
    finish("");
    loadConversations();
  } else if (event.cancelled) {
    turn.answer.classList.add("cancelled");
    finish("Cancelled.");
    loadConversations();
  } else if (event.status === "error" && (event.fatal || event.code)) {
    turn.answer.classList.add("error");
    turn.text.textContent = event.message;
    finish("");
  } else {
    turn.trace.apply(event);
    if (event.status) setStatus(event.status.replace(/_/g, " ") + "…");
  }
}

function finish(status) {
  state.running = null;
  $("send").disabled = false;
  $("stop").disabled = true;
  setStatus(status);
}

async function ask(question) {
  const turn = newTurn(question);
  state.running = turn;
  $("send").disabled = true;
  $("stop").disabled = false;
  setStatus("starting…");
  try {
    const ws = await socket();
    const request = { chatbot: state.chatbot, message: question };
    if (state.conversation) request.conversation_id = state.conversation;
    if ($("mode").value) request.mode = $("mode").value;
    if (Number($("reflect").value)) request.reflect = Number($("reflect").value);
    if (!state.authSent && apiKey()) { request.token = apiKey(); state.authSent = true; }
    ws.send(JSON.stringify(request));
  } catch (err) {
    turn.answer.classList.add("error");
    turn.text.textContent = err.message;
    finish("");
  }
  turn.node.scrollIntoView({ block: "end" });
}

// ---- conversations and settings ---------------------------------------------------------
async function loadChatbots() {
  const bots = await api("/api/chatbots");
  const select = $("chatbot");
  select.replaceChildren(...bots.map((b) => Object.assign(el("option", null, b.name), { value: b.name })));
  const wanted = localStorage.getItem("agentmodes-chatbot");
  if (bots.some((b) => b.name === wanted)) select.value = wanted;
  await selectChatbot(select.value);
}

async function selectChatbot(name) {
  state.chatbot = name || null;
  state.conversation = null;
  $("messages").replaceChildren();
  if (!name) { setStatus("No chatbot yet: create one with POST /api/chatbots."); return; }
  localStorage.setItem("agentmodes-chatbot", name);
  const bot = await api(`/api/chatbots/${encodeURIComponent(name)}`);
  $("settings-json").value = JSON.stringify(bot.settings, null, 2);
  await Promise.all([loadConversations(), loadDocuments()]);
}

async function loadDocuments() {
  const docs = await api(`/api/chatbots/${encodeURIComponent(state.chatbot)}/documents`);
  $("documents").replaceChildren(...docs.map((d) => {
    const link = el("a", null, d.name);
    link.href = `/api/chatbots/${encodeURIComponent(state.chatbot)}/documents/${encodeURIComponent(d.name)}`;
    link.target = "_blank";
    const item = el("li");
    item.append(link);
    return item;
  }));
}

async function upload(event) {
  event.preventDefault();
  const message = $("upload-message");
  const files = $("upload-files").files;
  if (!files.length) return;
  const form = new FormData();
  for (const file of files) form.append("files", file);
  try {
    let job = await api(`/api/chatbots/${encodeURIComponent(state.chatbot)}/documents`,
                        { method: "POST", body: form });
    while (job.status === "queued" || job.status === "running") {
      const p = job.progress || {};
      message.textContent = `Ingesting… ${p.phase || ""} ${p.done ?? 0}/${p.total ?? "?"}`;
      await new Promise((resolve) => setTimeout(resolve, 400));
      job = await api(`/api/jobs/${job.id}`);
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

async function loadConversations() {
  if (!state.chatbot) return;
  const list = await api(`/api/conversations?chatbot=${encodeURIComponent(state.chatbot)}`);
  $("conversations").replaceChildren(...list.map((c) => {
    const item = el("li", c.id === state.conversation ? "active" : "", c.title || "(untitled)");
    item.title = `${c.title} — ${c.message_count} messages`;
    item.onclick = () => openConversation(c.id);
    return item;
  }));
}

async function openConversation(id) {
  const conv = await api(`/api/conversations/${id}`);
  state.conversation = id;
  $("messages").replaceChildren();
  let turn = null;
  for (const m of conv.messages) {
    if (m.role === "user") { turn = newTurn(m.content); continue; }
    if (!turn) turn = newTurn("");
    turn.text.textContent = m.content;
    if (m.status !== "complete") turn.answer.classList.add(m.status);
    for (const event of (m.agent_trace && m.agent_trace.events) || []) turn.trace.apply(event);
    showSources(turn, m.sources);
    showMeta(turn, m.stream_metadata, m.usage);
    turn = null;
  }
  await loadConversations();
}

async function saveSettings(event) {
  event.preventDefault();
  const message = $("settings-message");
  try {
    const settings = JSON.parse($("settings-json").value);
    const bot = await api(`/api/chatbots/${encodeURIComponent(state.chatbot)}`,
                          { method: "PATCH", body: JSON.stringify({ settings }) });
    $("settings-json").value = JSON.stringify(bot.settings, null, 2);
    message.textContent = "Saved.";
  } catch (err) {
    message.textContent = "Not saved: " + err.message;
  }
}

// ---- wiring -----------------------------------------------------------------------------
$("ask-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question || state.running) return;
  $("question").value = "";
  ask(question);
});
$("question").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); $("ask-form").requestSubmit(); }
});
$("stop").addEventListener("click", () => {
  if (state.ws && state.running) state.ws.send(JSON.stringify({ type: "cancel" }));
});
$("chatbot").addEventListener("change", (event) => selectChatbot(event.target.value));
$("new-conversation").addEventListener("click", () => {
  state.conversation = null;
  $("messages").replaceChildren();
  loadConversations();
});
$("settings-form").addEventListener("submit", saveSettings);
$("upload-form").addEventListener("submit", upload);
$("key-button").addEventListener("click", () => {
  const key = prompt("API key for this server (stored in this browser only):", apiKey());
  if (key === null) return;
  localStorage.setItem("agentmodes-key", key.trim());
  if (state.ws) state.ws.close();
  loadChatbots().catch((err) => setStatus(err.message));
});

loadChatbots().catch((err) => setStatus(err.message));
