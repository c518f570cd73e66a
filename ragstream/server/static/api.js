// The HTTP API for the pages: JSON calls, uploads with progress, Server-Sent Events.
// The API key (needed when the server is not bound to loopback) is asked for once and kept for the tab.

const KEY_STORAGE = "ragstream.apiKey";

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || { code: `http_${status}`, message: `HTTP ${status}` };
    super(error.message);
    this.status = status;
    this.code = error.code;
    this.requestId = body && body.request_id;
    this.body = body;
  }
}

function authHeaders() {
  const key = sessionStorage.getItem(KEY_STORAGE);
  return key ? { "X-API-Key": key } : {};
}

function askForKey() {
  const key = window.prompt("This server needs an API key:");
  if (key) sessionStorage.setItem(KEY_STORAGE, key.trim());
  return Boolean(key);
}

async function parseBody(response) {
  const type = response.headers.get("content-type") || "";
  return type.includes("application/json") ? response.json() : null;
}

/** fetch() a JSON endpoint; throws ApiError with the server's error code. */
export async function api(path, { method = "GET", body } = {}) {
  const headers = { ...authHeaders() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status === 401 && askForKey()) return api(path, { method, body });
  const data = await parseBody(response);
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

/** GET a file's bytes (an ArrayBuffer); throws ApiError with the server's error code. */
export async function apiBytes(path) {
  const response = await fetch(path, { headers: authHeaders() });
  if (response.status === 401 && askForKey()) return apiBytes(path);
  if (!response.ok) throw new ApiError(response.status, await parseBody(response));
  return response.arrayBuffer();
}

/** POST files as multipart field "files"; onProgress(fraction) while the bytes go out. */
/**
 * GET /api/collections, each with `ref`: the name that names it for this caller. The list is exactly what the
 * caller may read, so a bare name names it when no other listed collection has that name (compared as the server
 * compares names, NFKC and case-insensitive); otherwise its qualified name (OWNER:NAME, or :NAME for the unowned one).
 */
export async function readableCollections() {
  const collections = await api("/api/collections");
  const key = (name) => name.normalize("NFKC").toLowerCase();
  const count = new Map();
  for (const c of collections) count.set(key(c.name), (count.get(key(c.name)) || 0) + 1);
  return collections.map((c) => ({ ...c, ref: count.get(key(c.name)) === 1 ? c.name : c.qualified_name }));
}

export function uploadFiles(files, onProgress, collection = "") {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    if (collection) form.append("collection", collection);
    for (const file of files) form.append("files", file, file.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/documents");
    for (const [name, value] of Object.entries(authHeaders())) xhr.setRequestHeader(name, value);
    xhr.responseType = "json";
    xhr.upload.onprogress = (event) => event.lengthComputable && onProgress(event.loaded / event.total);
    xhr.onload = () => {
      if (xhr.status === 401 && askForKey()) return uploadFiles(files, onProgress, collection).then(resolve, reject);
      // Every file failed: the error body still lists each file's result.
      if (xhr.status >= 400 && !(xhr.response && xhr.response.files)) return reject(new ApiError(xhr.status, xhr.response));
      resolve({ status: xhr.status, body: xhr.response });
    };
    xhr.onerror = () => reject(new ApiError(0, { error: { code: "network_error", message: "network error" } }));
    xhr.send(form);
  });
}

/** POST JSON and read the text/event-stream answer; onEvent(type, data) per message. */
export async function streamEvents(path, body, onEvent, signal) {
  const response = await fetch(path, {
    method: "POST", signal,
    headers: { "Content-Type": "application/json", Accept: "text/event-stream", ...authHeaders() },
    body: JSON.stringify(body),
  });
  if (response.status === 401 && askForKey()) return streamEvents(path, body, onEvent, signal);
  if (!response.ok) throw new ApiError(response.status, await parseBody(response));
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let type = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) type = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
        }
        if (data.length) onEvent(type, JSON.parse(data.join("\n")));
      }
    }
  } finally {
    // Stopped early (abort, or an error event): close the connection so the server cancels the answer.
    reader.cancel().catch(() => {});
  }
}

/** A short human text for an error, with its code and request id. */
export function describe(error) {
  if (error instanceof ApiError) {
    return `${error.message} (${error.code}${error.requestId ? `, request ${error.requestId}` : ""})`;
  }
  return String(error && error.message ? error.message : error);
}

/** Build an element: el("td", {class: "x"}, "text", child). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
  return node;
}

/** An ISO 8601 time on one line: "2026-11-24 15:39 UTC" (the full value goes in a title). */
export function shortTime(iso) {
  if (!iso) return "";
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso);
  return match ? `${match[1]} ${match[2]} UTC` : iso;
}

/** The document view's address for a document, at a chunk (by id) or a page when given, with the quoted
 * passage sentence (``quote``) to highlight there. */
export function documentHref(documentId, { chunkId, page, quote } = {}) {
  const params = new URLSearchParams({ id: documentId });
  if (chunkId) params.set("chunk", chunkId);
  if (page) params.set("page", page);
  if (quote) params.set("quote", quote);
  return `document.html?${params}`;
}
