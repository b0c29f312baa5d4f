// The console's calls to its server: JSON requests, and Server-Sent Events read from a fetch
// (EventSource cannot POST). The server's base is the page's address without its `/ui`, so the
// console works under any prefix the server is mounted at.

export const base = location.pathname.replace(/\/ui\/?$/, "");
let bearer = sessionStorage.getItem("helikon-token");

export function useToken(token) {
  bearer = token || null;
  if (bearer) sessionStorage.setItem("helikon-token", bearer);
  else sessionStorage.removeItem("helikon-token");
}

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message || `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code;
  }
}

function headers(extra) {
  const all = { "Content-Type": "application/json", ...extra };
  if (bearer) all.Authorization = `Bearer ${bearer}`;
  return all;
}

export async function call(method, path, body, extra = {}) {
  const response = await fetch(base + path, {
    method,
    headers: headers(extra),
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// Open an SSE response and call `onEvent({seq, type, data})` for each event; resolves with the
// run's id once the stream ends. `signal` aborts the reading (not the run: cancel does that).
export async function stream(method, path, body, extra, onEvent, onRunId) {
  const response = await fetch(base + path, {
    method,
    headers: { ...headers(extra), Accept: "text/event-stream" },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
  const runId = response.headers.get("X-Run-Id");
  if (onRunId) onRunId(runId);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let frame = { data: [], type: "message", id: null };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let cut;
    while ((cut = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, cut).replace(/\r$/, "");
      buffer = buffer.slice(cut + 1);
      if (line === "") {
        if (frame.data.length) {
          onEvent({ seq: frame.id === null ? null : Number(frame.id), type: frame.type, data: JSON.parse(frame.data.join("\n")) });
        }
        frame = { data: [], type: "message", id: null };
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") frame.data.push(text);
        else if (field === "event") frame.type = text;
        else if (field === "id") frame.id = text;
      }
    }
  }
  return runId;
}
