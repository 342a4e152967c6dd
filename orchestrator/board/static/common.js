// Shared by the board and the run page: tokens, requests, formatting, and the card projection
// (the same rules as orchestrator/board.py, which serves GET /board; keep the two in step).

// The feed's SSE event names: each kind, but a run's error is "run-error" ("error" is
// EventSource's own name for a broken connection).
export const KINDS = ["text-delta", "tool-call", "tool-result", "status", "cost", "done", "run-error"];
export const COLUMNS = [
  ["queued", "Queued"],
  ["running", "Running"],
  ["waiting", "Waiting for approval"],
  ["done", "Done"],
  ["failed", "Failed"],
  ["aborted", "Aborted"],
  ["interrupted", "Interrupted"],
];
const TERMINAL = new Set(["done", "failed", "aborted", "interrupted"]);
const LAST_LINE_CHARS = 200;

function meta(name) {
  const el = document.querySelector(`meta[name="${name}"]`);
  return el ? el.getAttribute("content") || "" : "";
}

// The token (every read and action needs it, on loopback too) arrives once in the URL fragment
// that `ringleader serve` prints (#token=…: never sent to the server, never logged), is kept for
// this tab only (sessionStorage), and is sent in the Authorization header; the feed's
// EventSource, which cannot set headers, passes it as ?token= (GET /events only).
function pageToken() {
  const hash = new URLSearchParams(location.hash.slice(1));
  const fromHash = hash.get("token");
  if (fromHash) {
    sessionStorage.setItem("ringleader-token", fromHash);
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem("ringleader-token") || "";
}

export const token = pageToken();
export const hosting = meta("ringleader-hosting") === "yes";
export const NO_TOKEN =
  "no access token: open the URL `ringleader serve` printed (it ends in #token=…)";

export function withToken(url) {
  const u = new URL(url, location.href);
  u.searchParams.set("token", token);
  return u.pathname + u.search;
}

export async function getJSON(path) {
  if (!token) throw new Error(NO_TOKEN);
  const response = await fetch(path, {
    headers: { Authorization: `Bearer ${token}` },
    cache: "no-store",
  });
  if (response.status === 401) throw new Error(`${path}: the access token was refused (${NO_TOKEN})`);
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

// Actions: token in a header (never a cookie), JSON body; the answer's error is shown as is.
export async function post(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
    cache: "no-store",
  });
  let data = {};
  try {
    data = await response.json();
  } catch {
    data = { error: `HTTP ${response.status}` };
  }
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

// An element with text content only: run text never becomes markup.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

export function formatCost(costUsd, estimated) {
  if (costUsd === null || costUsd === undefined) return "cost unknown";
  const dollars = costUsd < 0.01 ? costUsd.toFixed(4) : costUsd.toFixed(2);
  return estimated ? `est. $${dollars}` : `$${dollars}`;
}

export function formatTokens(n) {
  return n >= 10000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

export function formatElapsed(ms) {
  if (ms === null || ms === undefined || ms < 0) return "";
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m ${s % 60}s` : `${Math.floor(m / 60)}h ${m % 60}m`;
}

export function runtimeOf(runKey) {
  const m = /^runtime:(.+?):task:/.exec(runKey) || /^runtime:([^:]+):/.exec(runKey); // an id may hold a colon (acp:claude)
  return m ? m[1] : "";
}

// -- the projection (orchestrator/board.py's apply) -----------------------------------------

export function newCard(runKey) {
  return {
    runKey,
    column: "queued",
    phase: "queued",
    reason: null,
    inputTokens: 0,
    outputTokens: 0,
    costUsd: null,
    estimated: false,
    startedTs: null,
    updatedTs: null,
    endedTs: null,
    lastLine: "",
    textTail: "",
    events: 0,
    openToolCalls: [],
    error: null,
    errorCode: null,
    waitingFor: null,
    // The run's refused tool calls ({needsApproval, denied, summary, hint} or null): never
    // classified here. The server folds them (orchestrator/core/refusals.py, the CLI's fold)
    // into its cards; the page takes them from GET /board, /run-tail and /run-meta (asked when
    // a run ends), and applyEvent carries them over unchanged.
    refusals: null,
  };
}

function lastLine(tail) {
  const lines = tail.split(/\r\n|\r|\n/).filter((l) => l.trim());
  return lines.length ? lines[lines.length - 1].slice(-LAST_LINE_CHARS) : "";
}

function ending(reason, errorCode) {
  if (reason === "aborted") return "aborted";
  if (reason === "error") return errorCode === "interrupted" ? "interrupted" : "failed";
  return "done";
}

export function applyEvent(card, ev) {
  if (TERMINAL.has(card.column)) return { ...card, events: card.events + 1 };
  if (card.column === "queued" && ev.kind === "status" && ev.phase === "queued") {
    return { ...card, events: card.events + 1, updatedTs: ev.ts, waitingFor: ev.detail ?? null };
  }
  const c = {
    ...card,
    events: card.events + 1,
    startedTs: card.startedTs ?? ev.ts,
    updatedTs: ev.ts,
    column: card.column === "queued" ? "running" : card.column,
    phase: card.phase === "queued" ? "running" : card.phase,
    waitingFor: null,
  };
  switch (ev.kind) {
    case "text-delta":
      if (ev.channel === "reasoning") return { ...c, phase: "thinking" };
      {
        const tail = (card.textTail + ev.text).slice(-2 * LAST_LINE_CHARS);
        return { ...c, textTail: tail, lastLine: lastLine(tail) };
      }
    case "tool-call": {
      const calls = card.openToolCalls.includes(ev.toolCallId)
        ? card.openToolCalls
        : [...card.openToolCalls, ev.toolCallId];
      return { ...c, openToolCalls: calls, phase: `tool: ${ev.name}` };
    }
    case "tool-result":
      return {
        ...c,
        openToolCalls: card.openToolCalls.filter((id) => id !== ev.toolCallId),
        phase: "running",
      };
    case "status":
      return { ...c, phase: ev.phase };
    case "cost":
      return {
        ...c,
        inputTokens: Math.max(card.inputTokens, ev.usage.inputTokens || 0),
        outputTokens: Math.max(card.outputTokens, ev.usage.outputTokens || 0),
        costUsd: ev.costUsd ?? card.costUsd,
        estimated: ev.costUsd !== null && ev.costUsd !== undefined ? !!ev.estimated : card.estimated,
      };
    case "error":
      return { ...c, error: ev.message, errorCode: ev.code ?? null };
    case "done":
      return {
        ...c,
        column: ending(ev.reason, card.errorCode),
        phase: ev.reason,
        reason: ev.reason,
        endedTs: ev.ts,
        openToolCalls: [],
        inputTokens: Math.max(card.inputTokens, ev.usage ? ev.usage.inputTokens || 0 : 0),
        outputTokens: Math.max(card.outputTokens, ev.usage ? ev.usage.outputTokens || 0 : 0),
        costUsd: ev.costUsd ?? card.costUsd,
      };
    default:
      return c;
  }
}

export function columnOf(card, pendingIds) {
  const asked = card.phase === "waiting_approval" || card.openToolCalls.some((id) => pendingIds.has(id));
  if (card.column === "running" && asked) {
    return "waiting";
  }
  return card.column;
}

// Follow the feed from `cursor`: every event once, in order. EventSource reconnects by itself
// and sends Last-Event-ID (the last id it saw); ids at or below the last applied one are
// skipped, so a resumed stream never applies an event twice.
export function follow(path, cursor, onEvent, onState) {
  let last = cursor;
  const url = new URL(withToken(path), location.href);
  url.searchParams.set("last_event_id", String(cursor));
  const source = new EventSource(url.pathname + url.search);
  const handle = (message) => {
    const gid = Number(message.lastEventId);
    if (!(gid > last)) return;
    last = gid;
    const data = JSON.parse(message.data);
    onEvent(gid, data.runKey, data.event);
  };
  for (const kind of KINDS) source.addEventListener(kind, handle);
  source.addEventListener("open", () => onState("live"));
  source.addEventListener("error", () => onState("reconnecting"));
  return { source, lastId: () => last };
}

// The standing grants of the approval book (GET /grants: "for the rest of the run" and "always
// here" answers, which `ringleader approvals` lists too), each with a Revoke button (POST
// /grants/revoke: that grant goes, and the tool asks again). `path` may filter (?run=KEY).
export async function showGrants(box, path, onError) {
  const grants = await getJSON(path);
  box.hidden = !grants.length;
  const list = box.querySelector("ul");
  list.replaceChildren(...grants.map((g) => {
    const what = `${g.tool}: allowed ${g.describe}`;
    const revoke = async () => {
      try {
        await post("/grants/revoke", { scope: g.scope, tool: g.tool, runtime: g.runtime, cwd: g.cwd, run: g.run });
        await showGrants(box, path, onError);
      } catch (e) {
        onError(String(e.message));
      }
    };
    return el("li", { class: "grant", "data-grant-tool": g.tool, "data-grant-scope": g.scope },
      el("span", { text: `${what} ` }),
      el("button", { type: "button", onclick: revoke, "aria-label": `Revoke: ${what}`, text: "Revoke" }));
  }));
}
