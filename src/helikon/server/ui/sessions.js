// The sessions pane: the server's sessions, and one session's log drawn as a tree. Each event
// hangs under the one it followed (`parent`); a rewind starts a new branch beside the old one,
// which stays in the log. From any event: rewind the session to it, or fork a new session there.

import { call } from "./api.js";
import { el } from "./dom.js";

function summary(event) {
  const text = (event.content || []).filter((p) => p.type === "text").map((p) => p.text).join("");
  if (text) return text.length > 80 ? text.slice(0, 80) + "…" : text;
  if (event.type === "tool_called") return `${event.name}(${JSON.stringify(event.args)})`;
  if (event.type === "rewound") return `back to ${event.to_seq}`;
  if (event.type === "compacted") return "earlier events summarized";
  if (event.type === "turn_closed") return event.outcome;
  return "";
}

export class SessionsPane {
  constructor(root, { onOpen, onError }) {
    this.root = root;
    this.onOpen = onOpen;
    this.onError = onError;
    this.list = el("ul", { class: "session-list" });
    this.tree = el("div", { class: "tree" });
    const refresh = el("button", { type: "button" }, "Refresh");
    refresh.addEventListener("click", () => this.load());
    root.replaceChildren(el("div", { class: "row" }, refresh), this.list, this.tree);
  }

  async load() {
    try {
      const { sessions } = await call("GET", "/sessions");
      this.list.replaceChildren(...sessions.map((s) => {
        const button = el("button", { type: "button", class: "link" }, s.session_id);
        button.addEventListener("click", () => this.show(s.session_id));
        return el("li", {}, button, el("span", { class: "muted" }, ` ${s.event_count} events`));
      }));
    } catch (error) {
      this.onError(error.message);
    }
  }

  async show(sessionId) {
    this.current = sessionId;
    try {
      const { events } = await call("GET", `/sessions/${encodeURIComponent(sessionId)}/events`);
      this.draw(sessionId, events);
    } catch (error) {
      this.onError(error.message);
    }
  }

  draw(sessionId, events) {
    const children = new Map();
    const markers = [];
    for (const entry of events) {
      if (entry.parent === null) { markers.push(entry); continue; }
      if (!children.has(entry.parent)) children.set(entry.parent, []);
      children.get(entry.parent).push(entry);
    }
    const open = el("button", { type: "button" }, "Chat on this session");
    open.addEventListener("click", () => this.onOpen(sessionId));
    const root = el("ol", { class: "branch" });
    this.grow(root, children, -1);
    const marks = markers.map((m) => el("li", { class: `node ${m.event.type}` }, `${m.seq} ${m.event.type} ${summary(m.event)}`));
    this.tree.replaceChildren(el("h3", {}, sessionId, " ", open), root,
      marks.length ? el("details", {}, el("summary", {}, `${marks.length} marker(s)`), el("ol", {}, ...marks)) : "");
  }

  grow(list, children, parent) {
    // A chain goes on in `list` (the active branch first); a node's other children each start
    // a nested branch, drawn right under the event where the log went another way.
    let node = parent;
    for (;;) {
      const next = [...(children.get(node) || [])].sort((x, y) => Number(y.active) - Number(x.active) || x.seq - y.seq);
      if (!next.length) return;
      const [first, ...others] = next;
      list.append(this.row(first));
      for (const other of others) {
        const branch = el("ol", { class: "branch nested" }, this.row(other));
        this.grow(branch, children, other.seq);
        list.append(el("li", { class: "fork-point" }, branch));
      }
      node = first.seq;
    }
  }

  row(entry) {
    const rewind = el("button", { type: "button", title: "Rewind the session to this event" }, "rewind here");
    const fork = el("button", { type: "button", title: "A new session from this event" }, "fork here");
    rewind.addEventListener("click", () => this.act("rewind", { to_seq: entry.seq }));
    fork.addEventListener("click", () => this.act("fork", { at_seq: entry.seq }));
    return el("li", { class: `node ${entry.event.type}${entry.active ? " active" : ""}`, "data-seq": String(entry.seq) },
      el("span", { class: "seq" }, entry.seq), " ", el("b", {}, entry.event.type), " ",
      el("span", { class: "text" }, summary(entry.event)), " ", rewind, fork);
  }

  async act(what, body) {
    try {
      const done = await call("POST", `/sessions/${encodeURIComponent(this.current)}/${what}`, body);
      if (what === "fork") {
        await this.load();
        await this.show(done.session_id);
      } else {
        await this.show(this.current);
      }
    } catch (error) {
      this.onError(error.message);
    }
  }
}
