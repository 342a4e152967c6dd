// The run page's changes: what the run changed in its workspace (GET /runs/KEY/diff, the same
// facts as `ringleader diff --json`), a unified diff per file (diffview.js: line numbers, syntax
// highlighting, long files collapsed), refreshed while the run works; comments on lines of it
// sent back to the agent (the same as `ringleader comment`); and apply / push / pull request
// (POST /runs/KEY/apply, the same as `ringleader apply`).
import { el, getJSON, post } from "./common.js";
import { fileView, nearScreen, statusLabel } from "./diffview.js";

const REFRESH_MS = 3000; // while the run is running
const runKey = decodeURIComponent(location.pathname.slice("/run/".length));
const box = document.getElementById("changes");
const files = document.getElementById("changed-files");
const view = document.getElementById("diff");
const total = document.getElementById("changes-total");
const result = document.getElementById("apply-result");
const commentBox = document.getElementById("comment-box");
const commentWhere = document.getElementById("comment-where");
const commentText = document.getElementById("comment-text");
const commentList = document.getElementById("comment-list");
const commentsBox = document.getElementById("comments");
const commentNotice = document.getElementById("comment-notice");
const sendButton = document.getElementById("comments-send");
const commentsUrl = `/runs/${encodeURIComponent(runKey)}/comments`;
let last = "";
const opened = new Map(); // path → open, as the person left it (kept across live refreshes)
let selection = null; // {file, start, end, anchor}: the lines the next comment is on
let pending = []; // the run's comments not sent yet (GET /runs/KEY/comments)
const deferred = nearScreen(() => mark()); // a diff of many files: built as it is scrolled to

function rowsOf(path) {
  const node = view.querySelector(`details.diff-file[data-path="${CSS.escape(path)}"]`);
  return node ? [...node.querySelectorAll(".diff-row")] : [];
}

// Selected and commented lines marked on the rows; the comment form under the selection.
function mark() {
  for (const row of view.querySelectorAll(".diff-row.selected, .diff-row.commented")) {
    row.classList.remove("selected", "commented");
  }
  for (const c of pending) {
    for (const row of rowsOf(c.file)) {
      const n = Number(row.dataset.new);
      if (row.dataset.new && n >= c.start && n <= c.end) row.classList.add("commented");
    }
  }
  if (!selection) {
    commentBox.hidden = true;
    return;
  }
  let lastRow = null;
  for (const row of rowsOf(selection.file)) {
    const n = Number(row.dataset.new);
    if (row.dataset.new && n >= selection.start && n <= selection.end) {
      row.classList.add("selected");
      lastRow = row;
    }
  }
  const span = selection.start === selection.end ? `line ${selection.start}` : `lines ${selection.start}–${selection.end}`;
  commentWhere.textContent = `${selection.file}, ${span}`;
  if (lastRow) lastRow.after(commentBox);
  commentBox.hidden = false;
}

// A click on a new-side line number (or Enter/Space on it): that line; with Shift, the range
// from the last one. The comment box takes the focus; Cancel or Escape gives it back.
let pickedFrom = null;
function pick(path, line, event) {
  pickedFrom = event.currentTarget instanceof HTMLElement ? event.currentTarget : null;
  if (event.shiftKey && selection && selection.file === path) {
    const a = selection.anchor;
    selection = { file: path, start: Math.min(a, line), end: Math.max(a, line), anchor: a };
  } else {
    selection = { file: path, start: line, end: line, anchor: line };
  }
  commentNotice.textContent = "";
  mark();
  commentText.focus();
}

function showPending() {
  commentList.replaceChildren(...pending.map((c) => el("li", { "data-comment": c.id },
    el("span", { class: "comment-where", text: c.start === c.end ? `${c.file}:${c.start}` : `${c.file}:${c.start}-${c.end}` }),
    " ", el("span", { class: "comment-text", text: c.text }),
    " ", el("button", { type: "button", class: "comment-remove", title: "remove this comment", text: "remove", onclick: () => withdraw(c) }))));
  commentsBox.hidden = pending.length === 0;
  sendButton.textContent = `Send ${pending.length} comment${pending.length === 1 ? "" : "s"} to the agent`;
  mark();
}

async function withdraw(c) {
  try {
    await post(`${commentsUrl}/withdraw`, { id: c.id });
    pending = pending.filter((p) => p.id !== c.id);
    commentNotice.dataset.error = "no";
    commentNotice.textContent = `comment removed (${pending.length} waiting)`;
    showPending();
  } catch (err) {
    commentNotice.dataset.error = "yes";
    commentNotice.textContent = String(err.message);
  }
}

async function loadComments() {
  try {
    pending = (await getJSON(commentsUrl)).filter((c) => c.sentMs === null);
    showPending();
  } catch {
    /* a run with no recorded session takes no comments */
  }
}

commentBox.addEventListener("submit", async (e) => {
  e.preventDefault();
  if (!selection) return;
  const text = commentText.value.trim();
  if (!text) return;
  try {
    const made = await post(commentsUrl, { file: selection.file, start: selection.start, end: selection.end, text });
    pending.push(made);
    commentText.value = "";
    selection = null;
    commentNotice.dataset.error = "no";
    commentNotice.textContent = `comment added (${pending.length} waiting)`;
    showPending();
    if (pickedFrom && pickedFrom.isConnected) pickedFrom.focus(); // back where the person was
  } catch (err) {
    commentNotice.dataset.error = "yes";
    commentNotice.textContent = String(err.message);
  }
});
function cancelComment() {
  selection = null;
  mark();
  if (pickedFrom && pickedFrom.isConnected) pickedFrom.focus();
}
document.getElementById("comment-cancel").addEventListener("click", cancelComment);
commentText.addEventListener("keydown", (e) => {
  if (e.key === "Escape") cancelComment();
});
sendButton.addEventListener("click", async () => {
  try {
    const r = await post(`${commentsUrl}/send`, {});
    const n = pending.length;
    pending = [];
    showPending();
    commentNotice.dataset.error = "no";
    commentNotice.textContent = r.via === "steer"
      ? `sent ${n} comment(s): steered into the running agent`
      : `sent ${n} comment(s): the agent resumes its session with them (${r.runKeyPrefix})`;
  } catch (err) {
    commentNotice.dataset.error = "yes";
    commentNotice.textContent = String(err.message);
  }
});

function render(data) {
  const shown = JSON.stringify(data.files) + JSON.stringify(data.applied);
  if (shown === last) return;
  last = shown;
  box.hidden = false;
  const t = data.totals;
  const compare = document.getElementById("compare-link");
  compare.href = `/compare/${encodeURIComponent(data.task)}${location.hash}`;
  compare.hidden = false;
  total.textContent = t.files
    ? `${t.files} file${t.files === 1 ? "" : "s"}, +${t.added} −${t.removed} · ${data.label} in ${data.kind} ${data.workspace}`
    : `no changes · ${data.label} in ${data.kind} ${data.workspace}`;
  files.replaceChildren(...data.files.map((f) =>
    el("li", { "data-path": f.path },
      el("a", { href: `#file-${encodeURIComponent(f.path)}`, text: f.path, onclick: (e) => {
        e.preventDefault();
        const node = view.querySelector(`details[data-path="${CSS.escape(f.path)}"]`);
        if (node) { node.open = true; node.scrollIntoView(); }
      } }),
      ` ${statusLabel(f)} ` + (f.binary ? "binary" : f.large ? "large" : `+${f.added} −${f.removed}`))));
  document.getElementById("changes").append(commentBox); // out of the rows about to go
  deferred.reset();
  view.replaceChildren(...data.files.map((f) => fileView(f, {
    onLine: pick,
    later: deferred.later,
    open: (path) => opened.get(path),
    toggled: (path, open) => {
      opened.set(path, open);
      if (open) mark();
    },
  })));
  mark();
  document.getElementById("apply-form").hidden = data.kind === "your checkout"; // already there
  if (data.applied) {
    const a = data.applied;
    result.textContent = a.landedOn ? `applied: landed on ${a.landedOn} (${a.how})` : `applied: ${a.how}`;
  }
}

async function refresh() {
  try {
    const data = await getJSON(`/runs/${encodeURIComponent(runKey)}/diff`);
    render(data);
    if (data.status === "running") setTimeout(refresh, REFRESH_MS);
  } catch {
    box.hidden = true; // a run whose start was not recorded, or a removed workspace
  }
}

document.getElementById("apply-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const value = (id) => document.getElementById(id).value.trim() || undefined;
  const body = {
    onto: value("apply-onto"),
    mode: document.getElementById("apply-mode").value,
    push: value("apply-push"),
    pr: document.getElementById("apply-pr").checked,
  };
  result.dataset.error = "no";
  result.textContent = "applying…";
  try {
    const r = await post(`/runs/${encodeURIComponent(runKey)}/apply`, body);
    let text = r.copiedTo ? `copied back to ${r.copiedTo}` : `committed ${r.commit.slice(0, 12)} on ${r.branch}`;
    if (r.landedOn) text += `; landed on ${r.landedOn} (${r.how})`;
    if (r.pushedTo) text += `; pushed to ${r.pushedTo}`;
    if (r.prUrl) text += `; pull request ${r.prUrl}`;
    if (r.prCommand) text += `; open the pull request with: ${r.prCommand}`;
    result.textContent = text;
    last = "";
  } catch (err) {
    result.dataset.error = "yes";
    result.textContent = String(err.message);
  }
});

refresh();
loadComments();
