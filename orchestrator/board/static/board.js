// The board: a column per state, a card per run, live over the SSE feed.
import {
  COLUMNS,
  applyEvent,
  columnOf,
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

const cards = new Map(); // runKey → card (projection) + runtimeId, title
let pending = new Set(); // tool call ids waiting for approval
const board = document.getElementById("board");
const conn = document.getElementById("conn");
const notice = document.getElementById("notice");
const lists = new Map();

for (const [id, label] of COLUMNS) {
  const list = el("div", { class: "cards", "data-column": id });
  const count = el("span", { class: "count", text: "0" });
  board.append(
    el("section", { class: `column col-${id}`, "data-testid": `column-${id}` },
      el("h2", {}, label, " ", count), list),
  );
  lists.set(id, { list, count });
}

function say(text, isError = false) {
  notice.textContent = text;
  notice.dataset.error = isError ? "yes" : "no";
}

function cardNode(card) {
  const id = `card-${card.runKey}`;
  let node = document.getElementById(id);
  if (!node) {
    node = el("article", { class: "card", id, "data-run-key": card.runKey, tabindex: "0" });
    node.addEventListener("click", (e) => {
      if (e.target.closest("button")) return;
      location.href = `/run/${encodeURIComponent(card.runKey)}${location.hash}`;
    });
  }
  return node;
}

function render(card) {
  const column = columnOf(card, pending);
  const node = cardNode(card);
  node.dataset.column = column;
  node.dataset.events = String(card.events);
  const elapsedMs = card.startedTs ? (card.endedTs ?? Date.now()) - card.startedTs : null;
  const live = column === "running" || column === "waiting" || column === "queued";
  const children = [
    el("div", { class: "card-head" },
      el("span", { class: "runtime", text: card.runtimeId || runtimeOf(card.runKey) || "?" }),
      el("span", { class: "phase", text: card.phase })),
    el("div", { class: "title", text: card.title || card.runKey }),
    ...(card.chainTask ? [el("div", { class: "chain", "data-testid": "chain", text: `chain ${card.chainTask}${card.dependsOn?.length ? ` ← ${card.dependsOn.join(", ")}` : ""}` })] : []),
    el("div", { class: "nums" },
      el("span", { class: "tokens", text: `${formatTokens(card.inputTokens)} in · ${formatTokens(card.outputTokens)} out` }),
      el("span", { class: card.costUsd === null ? "cost unknown" : "cost", text: formatCost(card.costUsd, card.estimated) }),
      el("span", { class: "elapsed", "data-started": card.startedTs ?? "", text: formatElapsed(elapsedMs) })),
    el("div", { class: "last-line", "data-testid": "last-line", text: card.lastLine || card.error || card.waitingFor || "" }),
    ...(card.refusals ? [el("div", { class: "refused", "data-testid": "refused", title: card.refusals.hint, text: card.refusals.summary })] : []),
  ];
  if (hosting && live) {
    children.push(el("button", { class: "abort", type: "button", onclick: () => abort(card.runKey), text: "Abort" }));
  }
  node.replaceChildren(...children);
  const target = lists.get(column).list;
  if (node.parentElement !== target) target.prepend(node);
}

function counts() {
  for (const { list, count } of lists.values()) count.textContent = String(list.children.length);
}

async function abort(runKey) {
  try {
    await post("/abort", { run: runKey });
    say(`abort sent to ${runKey}`);
  } catch (e) {
    say(String(e.message), true);
  }
}

// Title and runtime of a run first seen on the feed: asked once per run (GET /run-meta, one
// row), and once more when it ends (a run of another process records its title with its
// outcome; the server's fold says which of its tool calls were refused). Never the whole board
// per event: the projection stays the page's own.
const metaAsked = new Map(); // runKey → "asked" | "final"
function refreshMeta(runKey, final) {
  const state = metaAsked.get(runKey);
  if (state === "final" || (state === "asked" && !final)) return;
  metaAsked.set(runKey, final ? "final" : "asked");
  getJSON(`/run-meta?run=${encodeURIComponent(runKey)}`)
    .then((meta) => {
      const card = cards.get(runKey);
      if (!card) return;
      const title = meta.title ?? card.title;
      const runtimeId = (meta.run && meta.run.runtimeId) ?? card.runtimeId;
      const chainTask = meta.chainTask ?? card.chainTask;
      const refusals = meta.refusals ?? card.refusals;
      if (title !== card.title || runtimeId !== card.runtimeId || chainTask !== card.chainTask
          || JSON.stringify(refusals) !== JSON.stringify(card.refusals)) {
        card.refusals = refusals;
        card.title = title;
        card.runtimeId = runtimeId;
        card.chainTask = chainTask;
        card.dependsOn = meta.dependsOn ?? card.dependsOn;
        render(card);
      }
    })
    .catch(() => {
      /* the run's end asks again */
    });
}

// A failed tool call may be a refused one: the server's fold says (GET /run-meta), one
// question in flight per run, asked once more if another failed call came meanwhile.
const refusalAsk = new Map(); // runKey → "asking" | "again"
function askRefusals(runKey) {
  if (refusalAsk.has(runKey)) {
    refusalAsk.set(runKey, "again");
    return;
  }
  refusalAsk.set(runKey, "asking");
  getJSON(`/run-meta?run=${encodeURIComponent(runKey)}`)
    .then((meta) => {
      const card = cards.get(runKey);
      if (card && JSON.stringify(meta.refusals) !== JSON.stringify(card.refusals)) {
        card.refusals = meta.refusals;
        render(card);
      }
    })
    .catch(() => {
      /* the run's end asks again */
    })
    .finally(() => {
      const again = refusalAsk.get(runKey) === "again";
      refusalAsk.delete(runKey);
      if (again) askRefusals(runKey);
    });
}

function onEvent(gid, runKey, ev) {
  let card = cards.get(runKey);
  const known = !!card;
  card = applyEvent(card || newCard(runKey), ev);
  const prev = cards.get(runKey);
  card.title = prev?.title ?? null;
  card.runtimeId = prev?.runtimeId ?? null;
  card.chainTask = prev?.chainTask;
  card.dependsOn = prev?.dependsOn;
  cards.set(runKey, card);
  render(card);
  counts();
  document.body.dataset.lastId = String(gid);
  if (!known) refreshMeta(runKey, false);
  else if (ev.kind === "done") refreshMeta(runKey, true);
  else if (ev.kind === "tool-result" && ev.isError) askRefusals(runKey);
}

async function pollApprovals() {
  if (!hosting) return;
  try {
    const list = await getJSON("/approvals");
    const next = new Set(list.map((a) => a.callId));
    const changed = next.size !== pending.size || [...next].some((id) => !pending.has(id));
    pending = next;
    if (changed) {
      for (const card of cards.values()) render(card);
      counts();
    }
  } catch {
    /* shown by the connection state */
  }
}

async function pollGrants() {
  if (!hosting) return;
  try {
    await showGrants(document.getElementById("grants"), "/grants", (m) => say(m, true));
  } catch {
    /* the next poll retries */
  }
}

function setupTaskForm(runtimes) {
  if (!hosting || !runtimes.length) return;
  const form = document.getElementById("new-task");
  const select = document.getElementById("task-runtime");
  select.replaceChildren(...runtimes.map((r) => el("option", { value: r, text: r })));
  if (runtimes.includes("native")) select.value = "native";
  form.hidden = false;
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const prompt = document.getElementById("task-prompt").value;
    const model = document.getElementById("task-model").value.trim() || null;
    try {
      const answer = await post("/tasks", { prompt, runtime: select.value, model });
      say(`started ${answer.taskId}`);
      document.getElementById("task-prompt").value = "";
    } catch (err) {
      say(String(err.message), true);
    }
  });
}

// The quota meters (GET /usage): a gauge per window of each runtime and account; a window
// nobody reported reads "unknown", never 0.
function gauge(w) {
  const current = w.current && w.usedPercent !== null;
  const used = current ? Math.max(0, Math.min(100, w.usedPercent)) : null;
  const when = w.resetsAt ? new Date(w.resetsAt).toLocaleString() : null;
  const text = !w.current
    ? `${w.window}: reset${when ? ` at ${when}` : ""} (used since: unknown)`
    : `${w.window}: ${used === null ? "used unknown" : `${w.usedPercent}% used`}${w.limited ? ` · held until ${when}` : when ? ` · resets ${when}` : ""}`;
  const bar = el("span", { class: "bar" });
  if (used !== null) {
    const fill = el("span", { class: "fill" });
    fill.style.width = `${used}%`; // CSSOM, not a style attribute: the page's CSP allows no inline styles
    bar.append(fill);
  }
  const node = el("span", { class: `gauge${w.limited ? " limited" : ""}${used === null ? " unknown" : ""}`, title: `${text} (${w.source})` }, bar, ` ${text}`);
  return node;
}

async function pollUsage() {
  try {
    const { usage } = await getJSON("/usage");
    const rows = usage.map((row) =>
      el("div", { class: "meter", "data-runtime": row.runtime, "data-account": row.account },
        el("strong", { text: `${row.runtime}${row.account === "default" ? "" : ` (${row.account})`}` }),
        ...(row.known ? row.windows.map(gauge) : [el("span", { class: "gauge unknown", text: " quota unknown" })])));
    document.getElementById("usage").replaceChildren(...rows);
  } catch {
    /* the next poll retries */
  }
}

async function main() {
  const snap = await getJSON("/board");
  for (const c of snap.cards) {
    cards.set(c.runKey, c);
    render(c);
  }
  pending = new Set(snap.approvals.map((a) => a.callId));
  counts();
  setupTaskForm(snap.runtimes);
  document.body.dataset.lastId = String(snap.cursor);
  follow("/events", snap.cursor, onEvent, (state) => {
    conn.dataset.state = state;
    conn.textContent = state;
  });
  setInterval(() => {
    for (const node of document.querySelectorAll(".card .elapsed[data-started]")) {
      const card = cards.get(node.closest(".card").dataset.runKey);
      if (card && card.startedTs && !card.endedTs) {
        node.textContent = formatElapsed(Date.now() - card.startedTs);
      }
    }
  }, 1000);
  setInterval(pollApprovals, 1000);
  pollGrants();
  setInterval(pollGrants, 3000);
  pollUsage();
  setInterval(pollUsage, 15000);
}

main().catch((e) => say(`cannot load the board: ${e.message}`, true));
