// The REST client: every request carries the stored key as a Bearer header, never in a URL,
// so document views and downloads work on keyed servers too (a plain link cannot send it).
const KEY = "agentmodes-key";

export function apiKey() { return localStorage.getItem(KEY) || ""; }
export function setApiKey(key) { localStorage.setItem(KEY, key.trim()); }

function headersFor(options) {
  // FormData sets its own multipart Content-Type (with the boundary).
  const json = options.body !== undefined && !(options.body instanceof FormData);
  const headers = Object.assign(json ? { "Content-Type": "application/json" } : {}, options.headers || {});
  if (apiKey()) headers.Authorization = "Bearer " + apiKey();
  return headers;
}

export async function request(path, options = {}) {
  const response = await fetch(path, Object.assign({}, options, { headers: headersFor(options) }));
  if (response.status === 401) throw new Error("This server needs an API key: use the API key button.");
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    const detail = body.detail ?? (body.error && body.error.message);
    throw new Error(typeof detail === "string" ? detail : response.statusText || "request failed");
  }
  return response;
}

export async function api(path, options = {}) {
  const response = await request(path, options);
  return response.status === 204 ? null : response.json();
}

// Fetch a file with the key and hand it to the browser as a download.
export async function download(path, fallbackName) {
  const response = await request(path);
  const disposition = response.headers.get("Content-Disposition") || "";
  const match = /filename="?([^";]+)"?/.exec(disposition);
  const url = URL.createObjectURL(await response.blob());
  const link = Object.assign(document.createElement("a"), { href: url, download: match ? match[1] : fallbackName });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export const enc = encodeURIComponent;
