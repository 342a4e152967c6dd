// One run: streamed text (reasoning folded), tool calls with input and output, the cost over
// time, related runs (retries, rotations, resumes), raw events on demand, and the actions.
import {
  applyEvent,
  el,
  follow,
  formatCost,
  formatElapsed,
  formatTokens,
  getJSON,
  hosting,
  newCard,
  post,
  runtimeOf,
  showGrants,
} from "./common.js";

const LONG_LINES = 12;
const LONG_CHARS = 1200;
const runKey = decodeURIComponent(location.pathname.slice("/run/".length));
const transcript = document.getElementById("transcript");
const notice = document.getElementById("notice");
const conn = document.getElementById("conn");
const rawBox = document.getElementById("raw");
const raw = [];
const tools = new Map(); // toolCallId → <details>
const costPoints = []; // [ts, costUsd or null, tokens]
let card = newCard(runKey);
let current = null; // the text block being streamed: {channel, node}
let pending = new Set();
let replaying = false;

function say(text, isError = false) {
  notice.textContent = text;
  notice.dataset.error = isError ? "yes" : "no";
}

function isLong(text) {
  return text.length > LONG_CHARS || text.split("\n").length > LONG_LINES;
}

function textBlock(channel) {
  if (current && current.channel === channel) return current.node;
  let node;
  if (channel === "reasoning") {
    const pre = el("pre", { class: "reasoning-text" });
    transcript.append(el("details", { class: "reasoning" }, el("summary", { text: "reasoning" }), pre));
    node = pre;
  } else {
    node = el("div", { class: "assistant", "data-testid": "assistant-text" });
    transcript.append(node);
  }
  current = { channel, node };
  return node;
}

function pretty(value) {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

function onEvent(gid, _key, ev) {
  raw.push(ev);
  if (rawBox.open) document.getElementById("raw-events").append(JSON.stringify(ev) + "\n");
  card = applyEvent(card, ev);
  switch (ev.kind) {
    case "text-delta":
      textBlock(ev.channel).append(ev.text);
      break;
    case "tool-call": {
      current = null;
      const box = tools.get(ev.toolCallId);
      const input = el("pre", { class: "tool-input", text: pretty(ev.input) });
      if (box) {
        box.querySelector(".tool-input").replaceWith(input);
        break;
      }
      const node = el("details", { class: "tool", "data-tool-call": ev.toolCallId, open: true },
        el("summary", {}, el("span", { class: "tool-name", text: ev.name }), el("span", { class: "tool-state", text: " running…" })),
        el("div", { class: "label", text: "input" }), input);
      tools.set(ev.toolCallId, node);
      transcript.append(node);
      break;
    }
    case "tool-result": {
      current = null;
      if (ev.isError && !replaying) refreshRefusals();
      let node = tools.get(ev.toolCallId);
      if (!node) {
        node = el("details", { class: "tool", "data-tool-call": ev.toolCallId },
          el("summary", {}, el("span", { class: "tool-name", text: ev.name }), el("span", { class: "tool-state" })));
        tools.set(ev.toolCallId, node);
        transcript.append(node);
      }
      node.querySelector(".tool-state").textContent = ev.isError ? " error" : " ok";
      node.classList.toggle("tool-error", !!ev.isError);
      const long = isLong(ev.output);
      const out = el("pre", { class: "tool-output", text: ev.output });
      if (long) {
        node.append(el("details", { class: "long-output" },
          el("summary", { text: `output (${ev.output.length} chars, ${ev.output.split("\n").length} lines)` }), out));
      } else {
        node.append(el("div", { class: "label", text: "output" }), out);
      }
      node.open = true;
      break;
    }
    case "status":
      current = null;
      if (ev.detail) transcript.append(el("div", { class: "status", text: `${ev.phase}: ${ev.detail}` }));
      break;
    case "cost":
      costPoints.push([ev.ts, ev.costUsd ?? null, (ev.usage.inputTokens || 0) + (ev.usage.outputTokens || 0)]);
      drawCost();
      break;
    case "error":
      current = null;
      transcript.append(el("div", { class: "error-line", text: `${ev.code ? ev.code + ": " : ""}${ev.message}` }));
      break;
    case "done":
      current = null;
      drawCost();
      if (!replaying) refreshRefusals();
      transcript.append(el("div", { class: `done-line done-${ev.reason}`, "data-testid": "done", text: `done: ${ev.reason}${ev.summary ? " — " + ev.summary : ""}` }));
      break;
  }
  summary();
}

// The run's refused tool calls come from the server's fold (orchestrator/core/refusals.py):
// in the card GET /run-tail starts with, and asked again after a failed call and at the end.
async function refreshRefusals() {
  try {
    const meta = await getJSON(`/run-meta?run=${encodeURIComponent(runKey)}`);
    card = { ...card, refusals: meta.refusals ?? null };
    summary();
  } catch {
    /* the next load shows them */
  }
}

function drawCost() {
  const svg = document.getElementById("cost-chart");
  const known = costPoints.some((p) => p[1] !== null);
  const pts = costPoints.map((p) => [p[0], known ? p[1] ?? 0 : p[2]]);
  if (!pts.length) return;
  if (card.startedTs !== null && card.startedTs < pts[0][0]) pts.unshift([card.startedTs, 0]);
  else pts.unshift([pts[0][0] - 1, 0]);
  if (card.endedTs !== null && card.endedTs > pts[pts.length - 1][0]) {
    pts.push([card.endedTs, pts[pts.length - 1][1]]);
  }
  const t0 = pts[0][0];
  const t1 = Math.max(pts[pts.length - 1][0], t0 + 1);
  const vmax = Math.max(...pts.map((p) => p[1]), 1e-9);
  const coords = pts.map(([t, v]) => `${((t - t0) / (t1 - t0)) * 590 + 5},${115 - (v / vmax) * 105}`);
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  line.setAttribute("points", coords.join(" "));
  line.setAttribute("class", "cost-line");
  svg.replaceChildren(line);
  const last = costPoints[costPoints.length - 1];
  document.getElementById("cost-label").textContent = known
    ? `${formatCost(card.costUsd, card.estimated)} after ${costPoints.length} report(s)`
    : `cost unknown; ${formatTokens(last[2])} tokens after ${costPoints.length} report(s)`;
}

function summary() {
  const elapsed = card.startedTs ? (card.endedTs ?? Date.now()) - card.startedTs : null;
  document.getElementById("run-summary").replaceChildren(
    el("span", { class: `badge col-${card.column}`, "data-testid": "run-column", text: card.column }),
    el("span", { text: ` ${runtimeOf(runKey)} · ${card.phase} · ${formatTokens(card.inputTokens)} in · ${formatTokens(card.outputTokens)} out · ${formatCost(card.costUsd, card.estimated)} · ${formatElapsed(elapsed)}` }),
    ...(card.refusals ? [el("div", { class: "refused", "data-testid": "refused", text: card.refusals.hint })] : []),
  );
  const live = card.column === "running" || card.column === "queued";
  document.getElementById("actions").hidden = !(hosting && live);
  if (lastColumn !== null && card.column !== lastColumn && NOTIFY_COLUMNS[card.column]) {
    notifyIfHidden(`ringleader: ${runtimeOf(runKey)} run ${NOTIFY_COLUMNS[card.column]}`, runKey);
  }
  lastColumn = card.column;
}

// The browser's Notification API, only while the page is in the background (plain text only).
const NOTIFY_COLUMNS = { waiting: "needs your approval", done: "is done", failed: "failed" };
let lastColumn = null;
function notifyIfHidden(title, body) {
  if (document.hidden && "Notification" in window && Notification.permission === "granted") {
    new Notification(title, { body });
  }
}
document.addEventListener(
  "click",
  () => {
    if ("Notification" in window && Notification.permission === "default") Notification.requestPermission();
  },
  { once: true },
);

function link(row, why) {
  return el("li", {},
    el("a", { href: `/run/${encodeURIComponent(row.runKey)}${location.hash}`, text: row.runKey }),
    ` ${why} · ${row.status}`);
}

async function loadMeta() {
  try {
    const meta = await getJSON(`/run-meta?run=${encodeURIComponent(runKey)}`);
    document.getElementById("run-title").textContent = meta.title || runKey;
    document.title = `ringleader: ${meta.title || runKey}`;
    const items = [];
    const resumedFrom = meta.run.outcome?.resumedFrom;
    for (const row of meta.related) {
      let why = "same task";
      if (row.runKey === resumedFrom) why = "resumed from";
      else if (row.outcome?.resumedFrom === runKey) why = "resumed by";
      else if (row.outcome?.chain && row.outcome.chain === meta.run.outcome?.chain) {
        const mine = meta.run.outcome;
        why = (mine.dependsOn || []).includes(row.outcome.chainTask)
          ? `chain: depends on ${row.outcome.chainTask}`
          : (row.outcome.dependsOn || []).includes(mine.chainTask)
            ? `chain: ${row.outcome.chainTask} depends on this`
            : `chain: ${row.outcome.chainTask}`;
      }
      else if (/:r\d+(:|$)/.test(row.runKey)) why = "rotation";
      else if (/:a\d+(:|$)/.test(row.runKey)) why = "retry";
      items.push(link(row, why));
    }
    if (items.length) {
      document.getElementById("related").replaceChildren(el("h2", { text: "Related runs" }), el("ul", {}, ...items));
    }
  } catch (e) {
    document.getElementById("run-title").textContent = runKey;
  }
}

async function pollApprovals() {
  if (!hosting) return;
  try {
    const list = (await getJSON("/approvals")).filter(
      (a) => a.run === runKey || runKey.startsWith(`${a.run}:`) || card.openToolCalls.includes(a.callId),
    );
    const ids = new Set(list.map((a) => a.id));
    if (ids.size === pending.size && [...ids].every((id) => pending.has(id))) return;
    pending = ids;
    document.getElementById("approvals").replaceChildren(...list.map(approvalRow));
  } catch {
    /* retried */
  }
}

async function pollGrants() {
  if (!hosting) return;
  try {
    await showGrants(document.getElementById("grants"), `/grants?run=${encodeURIComponent(runKey)}`, (m) => say(m, true));
  } catch {
    /* retried */
  }
}

function approvalRow(a) {
  // Allow / Allow for this run / Always here / Deny (with the message typed beside it, which the
  // model is told) / Edit input (the call runs with the edited JSON instead)
  const message = el("input", {
    type: "text", class: "approval-message", placeholder: "message for the model (with Deny)",
    "aria-label": "message with Deny",
  });
  const edited = el("textarea", { class: "approval-edit", hidden: true, "aria-label": "edited input" });
  edited.value = JSON.stringify(a.input, null, 2);
  const edit = () => {
    if (edited.hidden) {
      edited.hidden = false;
      return;
    }
    let input;
    try {
      input = JSON.parse(edited.value);
    } catch {
      say("the edited input is not valid JSON", true);
      return;
    }
    answer(a.id, true, "once", { input });
  };
  return el("div", { class: "approval", "data-approval": a.id },
    el("span", { text: `${a.tool} wants to run: ` }), el("code", { text: pretty(a.input) }),
    el("button", { type: "button", onclick: () => answer(a.id, true), text: "Allow" }),
    el("button", { type: "button", onclick: () => answer(a.id, true, "run"), text: "Allow for this run" }),
    el("button", { type: "button", onclick: () => answer(a.id, true, "always"), text: "Always here" }),
    message,
    el("button", { type: "button", onclick: () => answer(a.id, false, "once", { message: message.value }), text: "Deny" }),
    el("button", { type: "button", onclick: edit, text: "Edit input" }),
    edited);
}

async function answer(id, allow, scope = "once", extra = {}) {
  try {
    await post("/approve", { id, allow, scope, ...extra });
    say(allow ? "allowed" : "denied");
  } catch (e) {
    say(String(e.message), true);
  }
}

document.getElementById("abort").addEventListener("click", async () => {
  try {
    await post("/abort", { run: runKey });
    say("abort sent");
  } catch (e) {
    say(String(e.message), true);
  }
});
document.getElementById("steer-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = document.getElementById("steer-text");
  try {
    await post("/steer", { run: runKey, text: input.value });
    say("steer sent");
    input.value = "";
  } catch (err) {
    say(String(err.message), true);
  }
});
document.getElementById("say-form").hidden = !hosting;
document.getElementById("say-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = document.getElementById("say-text");
  try {
    const answer = await post("/say", { run: runKey, text: input.value });
    say(answer.delivery === "turn" ? "sent: the next turn starts now" : "queued for the run");
    input.value = "";
    pollFollowups();
  } catch (err) {
    say(String(err.message), true);
  }
});

async function pollFollowups() {
  if (!hosting) return;
  try {
    const queued = await getJSON(`/followups?run=${encodeURIComponent(runKey)}`);
    document.getElementById("followups").replaceChildren(
      ...queued.map((m) => el("li", { "data-followup": m.id },
        el("span", { text: `queued: ${m.text} ` }),
        el("button", { type: "button", onclick: () => editFollowup(m), text: "Edit" }),
        el("button", { type: "button", onclick: () => withdrawFollowup(m.id), text: "Withdraw" }))),
    );
  } catch {
    /* retried */
  }
}

async function editFollowup(m) {
  const text = window.prompt("New text", m.text);
  if (!text) return;
  try {
    await post("/followup", { id: m.id, text });
    pollFollowups();
  } catch (err) {
    say(String(err.message), true);
  }
}

async function withdrawFollowup(id) {
  try {
    await post("/followup", { id, withdraw: true });
    pollFollowups();
  } catch (err) {
    say(String(err.message), true);
  }
}

rawBox.addEventListener("toggle", () => {
  if (rawBox.open) {
    document.getElementById("raw-events").textContent = raw.map((e) => JSON.stringify(e)).join("\n") + "\n";
  }
});

// The page starts from the run's last events and its card (GET /run-tail), then follows the
// run's feed from there: a run of 100,000 events is not replayed event by event (issue 37).
// `#all` (the "show every event" link) replays the whole run instead.
const TAIL = 2000;

async function start() {
  let cursor = 0;
  if (location.hash !== "#all") {
    try {
      const tail = await getJSON(`/run-tail?run=${encodeURIComponent(runKey)}&limit=${TAIL}`);
      if (tail.earlier > 0) {
        const all = el("a", { href: "#all", "data-testid": "show-all", text: `show all ${tail.earlier + tail.events.length} events` });
        all.addEventListener("click", () => setTimeout(() => location.reload(), 0));
        transcript.append(el("div", { class: "status", "data-testid": "earlier" },
          el("span", { text: `${tail.earlier} earlier events not shown · ` }), all));
      }
      replaying = true; // the tail's card below has the refusals already
      for (const item of tail.events) onEvent(item.gid, runKey, item.event);
      replaying = false;
      card = { ...newCard(runKey), ...tail.card };
      cursor = tail.cursor;
      summary();
      drawCost();
    } catch (err) {
      say(String(err.message), true);
    }
  }
  follow(`/events?run=${encodeURIComponent(runKey)}`, cursor, onEvent, (state) => {
    conn.dataset.state = state;
    conn.textContent = state;
  });
}

summary();
loadMeta();
start();
setInterval(pollApprovals, 1000);
pollGrants();
setInterval(pollGrants, 3000);
setInterval(pollFollowups, 2000);
setInterval(summary, 1000);
