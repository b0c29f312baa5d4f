// The console: pick an agent, chat on a session (answers stream in), stop a run, decide a paused
// run's calls, and watch every event of the run. Everything a run produced is shown as text
// (markdown.js builds DOM nodes, never markup).

import { ApiError, base, call, stream, useToken } from "./api.js";
import { el } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { SessionsPane } from "./sessions.js";

const $ = (id) => document.getElementById(id);
const ui = {
  agent: $("agent"), session: $("session"), messages: $("messages"), events: $("events"),
  input: $("input"), send: $("send"), stop: $("stop"), status: $("status"), runId: $("run-id"),
};
let current = null; // the run in progress: {id, agent, lastSeq, assistant, text, tools}

function scrollDown(list) { list.scrollTop = list.scrollHeight; }
function say(text) { ui.status.textContent = text; }

function newSessionId() {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return "ui-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function setSession(id) {
  ui.session.value = id;
  history.replaceState(null, "", `#session=${encodeURIComponent(id)}`);
}

function addMessage(kind, text) {
  const item = el("li", { class: `message ${kind}` });
  if (kind === "assistant") item.append(renderMarkdown(text));
  else item.textContent = text;
  ui.messages.append(item);
  scrollDown(ui.messages);
  return item;
}

function logEvent(seq, type, data) {
  const item = el("li", { class: type },
    el("details", {}, el("summary", {}, el("span", { class: "seq" }, seq ?? "·"), type), el("pre", {}, JSON.stringify(data, null, 2))));
  ui.events.append(item);
  scrollDown(ui.events);
}

function toolBlock(call) {
  const result = el("pre", { class: "result" }, "…");
  const block = el("li", { class: "tool" },
    el("details", { open: "" }, el("summary", {}, "tool ", el("code", {}, call.name)),
      el("div", { class: "muted" }, "arguments"), el("pre", {}, JSON.stringify(call.args, null, 2)),
      el("div", { class: "muted" }, "result"), result));
  ui.messages.append(block);
  scrollDown(ui.messages);
  return result;
}

function textOf(content) {
  return (content || []).filter((part) => part.type === "text").map((part) => part.text).join("");
}

function onEvent({ seq, type, data }) {
  logEvent(seq, type, data);
  if (seq !== null) current.lastSeq = seq;
  switch (type) {
    case "token_delta":
      if (!current.assistant) current.assistant = addMessage("assistant", "");
      current.text += data.text;
      current.assistant.replaceChildren(renderMarkdown(current.text));
      scrollDown(ui.messages);
      break;
    case "message_output": {
      const text = textOf(data.item.content);
      if (!current.assistant) current.assistant = addMessage("assistant", text);
      else current.assistant.replaceChildren(renderMarkdown(text));
      current.assistant = null;
      current.text = "";
      break;
    }
    case "tool_call_item":
      current.tools.set(data.item.call_id, toolBlock(data.item));
      break;
    case "tool_output_item": {
      const result = current.tools.get(data.item.call_id);
      if (result) {
        result.textContent = textOf(data.item.content);
        if (data.item.is_error) result.classList.add("failed");
      }
      break;
    }
    case "run_failed":
      addMessage("error", `${data.error.kind}: ${data.error.message}`);
      break;
    case "run_paused":
      showApprovals(data.pending);
      break;
    case "stream_dropped":
    case "stream_idle":
      current.reconnect = true;
      break;
    default:
      break;
  }
}

async function loadHistory(sessionId) {
  // The conversation so far, from the session's log: its active branch, as the chat shows it.
  ui.messages.replaceChildren();
  let events;
  try {
    ({ events } = await call("GET", `/sessions/${encodeURIComponent(sessionId)}/events`));
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) say(error.message);
    return;
  }
  const results = new Map();
  const fragment = document.createDocumentFragment();
  const append = (node) => fragment.append(node);
  for (const { event, active } of events) {
    if (!active) continue;
    if (event.type === "user_message") {
      append(el("li", { class: "message user" }, textOf(event.content)));
    } else if (event.type === "assistant_message") {
      const text = textOf(event.content);
      if (text) append(el("li", { class: "message assistant" }, renderMarkdown(text)));
    } else if (event.type === "tool_called") {
      const result = el("pre", { class: "result" }, "…");
      results.set(event.call_id, result);
      append(el("li", { class: "tool" },
        el("details", {}, el("summary", {}, "tool ", el("code", {}, event.name)),
          el("div", { class: "muted" }, "arguments"), el("pre", {}, JSON.stringify(event.args, null, 2)),
          el("div", { class: "muted" }, "result"), result)));
    } else if (event.type === "tool_returned" && results.has(event.call_id)) {
      const result = results.get(event.call_id);
      result.textContent = textOf(event.content);
      if (event.is_error) result.classList.add("failed");
    }
  }
  ui.messages.append(fragment);
  scrollDown(ui.messages);
}

function busy(running) {
  ui.send.disabled = running;
  ui.stop.disabled = !running;
  say(running ? "running…" : "");
}

async function follow(run) {
  // Read the run's stream to its end, reconnecting from the last seq seen if the stream was cut.
  while (run.reconnect) {
    run.reconnect = false;
    await stream("GET", `/agents/${encodeURIComponent(run.agent)}/runs/${run.id}/stream`, undefined,
      { "Last-Event-ID": String(run.lastSeq) }, onEvent);
  }
}

async function send() {
  const text = ui.input.value.trim();
  if (!text || current) return;
  const agent = ui.agent.value;
  ui.input.value = "";
  addMessage("user", text);
  current = { id: null, agent, lastSeq: -1, assistant: null, text: "", tools: new Map(), reconnect: false };
  busy(true);
  try {
    await stream("POST", `/agents/${encodeURIComponent(agent)}/runs?stream=sse`, { input: text },
      { "X-Session-Id": ui.session.value }, onEvent, (id) => { current.id = id; ui.runId.textContent = id || ""; });
    await follow(current);
  } catch (error) {
    addMessage("error", error.message);
    if (error instanceof ApiError && error.status === 401) showLogin(error.message);
  } finally {
    current = null;
    busy(false);
    ui.input.focus();
  }
}

async function stop() {
  if (!current?.id) return;
  say("stopping…");
  try {
    await call("POST", `/agents/${encodeURIComponent(current.agent)}/runs/${current.id}/cancel?action=interrupt`);
  } catch (error) {
    say(error.message);
  }
}

function showApprovals(pending) {
  const run = { ...current };
  const box = el("li", { class: "approval" }, el("h3", {}, `Waiting for you: ${pending.length} call(s)`));
  for (const request of pending) {
    const reason = el("input", { placeholder: "reason (for deny)", "aria-label": "Reason" });
    const edited = el("textarea", { rows: "3", "aria-label": "Arguments" });
    edited.value = JSON.stringify(request.args, null, 2);
    const decide = async (decision) => {
      const one = { decision, digest: request.args_digest };
      if (decision === "deny") one.reason = reason.value;
      if (decision === "edit") {
        try { one.args = JSON.parse(edited.value); } catch { say("the arguments are not JSON"); return; }
        delete one.digest;
      }
      box.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      await resume(run, { [request.request_id]: one });
    };
    const approve = el("button", { type: "button" }, "Approve");
    const deny = el("button", { type: "button" }, "Deny");
    const edit = el("button", { type: "button" }, "Run with these arguments");
    approve.addEventListener("click", () => decide("approve"));
    deny.addEventListener("click", () => decide("deny"));
    edit.addEventListener("click", () => decide("edit"));
    box.append(el("div", { class: "pending" },
      el("div", {}, el("code", {}, request.tool), request.prompt ? ` — ${request.prompt}` : ""),
      edited, el("div", { class: "row" }, approve, deny, reason, edit)));
  }
  ui.messages.append(box);
  scrollDown(ui.messages);
}

async function resume(run, decisions) {
  current = { ...run, assistant: null, text: "", tools: new Map(), reconnect: true };
  busy(true);
  try {
    await call("POST", `/agents/${encodeURIComponent(run.agent)}/runs/${run.id}/approvals`, { decisions });
    await follow(current);
  } catch (error) {
    addMessage("error", error.message);
  } finally {
    current = null;
    busy(false);
  }
}

function messageText(item) {
  if (item.type === "system") return item.text;
  if (item.type === "tool_call") return `${item.name}(${JSON.stringify(item.args)})`;
  return textOf(item.content);
}

async function loadCalls() {
  // Each model call of the session: the model, what it cost and took, the tools offered; opened,
  // the messages it was sent (fetched for that call only) and its answer.
  const list = $("calls");
  const path = `/sessions/${encodeURIComponent(ui.session.value)}/requests`;
  try {
    const { calls } = await call("GET", path);
    list.replaceChildren(...calls.map((c) => {
      const usage = c.usage ? `${c.usage.input_tokens} in, ${c.usage.output_tokens} out` : "no usage reported";
      const took = c.latency_s === null ? "" : `, ${(c.latency_s * 1000).toFixed(0)} ms`;
      const body = el("div", {}, el("div", { class: "muted" }, "loading…"));
      const details = el("details", { class: "call" },
        el("summary", {}, el("span", { class: "seq" }, c.turn), `${c.provider}:${c.model} — ${usage}${took}`), body);
      details.addEventListener("toggle", async () => {
        if (!details.open || details.dataset.loaded) return;
        details.dataset.loaded = "1";
        const [full] = (await call("GET", `${path}?turn=${c.turn}`)).calls.filter((x) => x.turn === c.turn);
        body.replaceChildren(
          el("div", { class: "muted" }, `tools offered: ${c.tools.map((t) => t.name).join(", ") || "none"}`),
          el("div", { class: "muted" }, `settings: ${JSON.stringify(c.settings)}`),
          el("div", { class: "muted" }, `messages sent (${full.messages.length})`),
          el("ol", { class: "sent" }, ...full.messages.map((m) => el("li", {}, el("b", {}, m.type), " ", el("span", {}, messageText(m))))),
          el("div", { class: "muted" }, "answer"),
          el("pre", {}, JSON.stringify(c.answer, null, 2)));
      });
      return el("li", {}, details);
    }));
    if (!calls.length) list.replaceChildren(el("li", { class: "muted" }, "no model call on this session yet"));
  } catch (error) {
    list.replaceChildren(el("li", { class: "muted" }, error.message));
  }
}

async function saveCase() {
  try {
    const saved = await call("POST", `/sessions/${encodeURIComponent(ui.session.value)}/eval-case`, {});
    say(`saved as eval case ${saved.case.id}: line ${saved.line} of ${saved.dataset}`);
  } catch (error) {
    say(error.message);
  }
}

async function loadReports() {
  const list = $("evals");
  try {
    const { reports } = await call("GET", "/evals");
    list.replaceChildren(...reports.map((r) => el("li", {},
      r.error ? `${r.name}: ${r.error}` : el("a", { href: `${base}/evals/${encodeURIComponent(r.name)}`, target: "_blank", rel: "noopener" }, r.name),
      r.error ? "" : el("span", { class: "muted" }, ` ${r.dataset}, ${r.cases} cases, ${r.passed ? "passed" : "failed"}`))));
    if (!reports.length) list.replaceChildren(el("li", { class: "muted" }, "no reports in the server's folder yet"));
  } catch (error) {
    list.replaceChildren(el("li", { class: "muted" }, error.message));
  }
}

function showLogin(why) {
  $("login").hidden = false;
  $("login-why").textContent = why;
}

async function loadAgents() {
  try {
    const { agents } = await call("GET", "/agents");
    ui.agent.replaceChildren(...agents.map((a) => el("option", { value: a.name }, a.name)));
    $("login").hidden = true;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) showLogin(error.message);
    else say(error.message);
  }
}

function theme() {
  const now = document.documentElement.dataset.theme
    || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
  const next = now === "dark" ? "light" : "dark";
  document.documentElement.dataset.theme = next;
  localStorage.setItem("helikon-theme", next);
}

function start() {
  const saved = localStorage.getItem("helikon-theme");
  if (saved) document.documentElement.dataset.theme = saved;
  const fromHash = decodeURIComponent((location.hash.match(/^#session=(.+)$/) || [])[1] || "");
  setSession(fromHash || newSessionId());
  $("composer").addEventListener("submit", (event) => { event.preventDefault(); send(); });
  ui.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); send(); }
  });
  document.addEventListener("keydown", (event) => { if (event.key === "Escape") stop(); });
  ui.stop.addEventListener("click", stop);
  $("new-session").addEventListener("click", () => {
    setSession(newSessionId());
    ui.messages.replaceChildren();
    ui.events.replaceChildren();
  });
  ui.session.addEventListener("change", () => {
    setSession(ui.session.value.trim() || newSessionId());
    loadHistory(ui.session.value);
  });
  $("theme").addEventListener("click", theme);
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    useToken($("login-token").value.trim());
    loadAgents();
  });
  const sessions = new SessionsPane($("sessions"), {
    onOpen: (id) => { setSession(id); loadHistory(id); showTab("events"); },
    onError: say,
  });
  const showTab = (name) => {
    for (const tab of ["events", "calls", "sessions", "evals"]) {
      $(`tab-${tab}`).setAttribute("aria-selected", String(name === tab));
      $(tab).hidden = name !== tab;
    }
    if (name === "sessions") sessions.load().then(() => sessions.show(ui.session.value));
    if (name === "evals") loadReports();
    if (name === "calls") loadCalls();
  };
  for (const tab of ["events", "calls", "sessions", "evals"]) {
    $(`tab-${tab}`).addEventListener("click", () => showTab(tab));
  }
  $("save-case").addEventListener("click", saveCase);
  loadAgents()
    .then(() => loadHistory(ui.session.value))
    .then(() => { document.body.dataset.ready = String(performance.now()); });
}

start();
