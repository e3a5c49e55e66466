// Asking: one WebSocket streams the seed events of each run into its Turn.
import { apiKey } from "./api.js";
import { $, announce } from "./dom.js";
import { activity, words } from "./labels.js";
import { showComposition } from "./composition.js";
import { plainText, Turn } from "./turns.js";

export const session = { chatbot: null, conversation: null, ws: null, running: null, authSent: false,
                         onFinished: () => {} };

function setStatus(text) { $("status").textContent = text; }

function socket() {
  if (session.ws && session.ws.readyState <= 1) return Promise.resolve(session.ws);
  return new Promise((resolve, reject) => {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${scheme}://${location.host}/api/ws`);
    session.authSent = false;
    ws.onopen = () => { session.ws = ws; resolve(ws); };
    ws.onerror = () => reject(new Error("WebSocket connection failed"));
    ws.onmessage = (message) => onEvent(JSON.parse(message.data));
    ws.onclose = () => { if (session.running) end("Connection closed."); session.ws = null; };
  });
}

export function closeSocket() { if (session.ws) session.ws.close(); }

function onEvent(event) {
  const turn = session.running;
  if (!turn) return;
  if ("delta" in event && !event.status) {
    turn.appendToken(String(event.delta));
  } else if (event.done) {
    turn.finish(session.chatbot, event.full_response, event.sources);
    showComposition(turn, event);
    turn.meta({ mode: event.mode, iterations: event.iterations ?? turn.trace.current,
                adaptive_exit: event.adaptive_exit }, event.usage);
    if (!session.conversation) session.conversation = event.conversation_id;
    announce(plainText(turn));
    end("");
    session.onFinished();
  } else if (event.cancelled) {
    turn.fail("", "cancelled");
    end("Cancelled.");
    session.onFinished();
  } else if (event.status === "error" && (event.fatal || event.code)) {
    turn.fail(event.message, "error");
    announce(event.message);
    end("");
  } else {
    turn.trace.apply(event);
    if (event.status) {
      const label = activity(event);
      if (!turn.raw) turn.think(label + "…");
      setStatus(label + "…");
    }
  }
}

function end(status) {
  session.running = null;
  $("send").disabled = false;
  $("stop").disabled = true;
  setStatus(status);
}

export async function ask(question) {
  const turn = new Turn(question);
  session.running = turn;
  $("send").disabled = true;
  $("stop").disabled = false;
  turn.think(words().thinking);
  setStatus(words().thinking);
  announce(words().thinking);
  try {
    const ws = await socket();
    const request = { chatbot: session.chatbot, message: question };
    if (session.conversation) request.conversation_id = session.conversation;
    if ($("mode").value) request.mode = $("mode").value;
    if (Number($("reflect").value)) request.reflect = Number($("reflect").value);
    if (!session.authSent && apiKey()) { request.token = apiKey(); session.authSent = true; }
    ws.send(JSON.stringify(request));
  } catch (err) {
    turn.fail(err.message, "error");
    end("");
  }
  turn.node.scrollIntoView({ block: "end" });
}

export function cancel() {
  if (session.ws && session.running) session.ws.send(JSON.stringify({ type: "cancel" }));
}
