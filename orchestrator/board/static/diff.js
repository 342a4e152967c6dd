// The run page's changes: what the run changed in its workspace (GET /runs/KEY/diff, the same
// facts as `ringleader diff --json`), a unified diff per file built as text nodes (no renderer
// library, no markup from run text), long files collapsed, refreshed while the run works; and
// apply / push / pull request (POST /runs/KEY/apply, the same as `ringleader apply`).
import { el, getJSON, post } from "./common.js";
import { fileView, statusLabel } from "./diffview.js";

const REFRESH_MS = 3000; // while the run is running
const runKey = decodeURIComponent(location.pathname.slice("/run/".length));
const box = document.getElementById("changes");
const files = document.getElementById("changed-files");
const view = document.getElementById("diff");
const total = document.getElementById("changes-total");
const result = document.getElementById("apply-result");
let last = "";

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
  view.replaceChildren(...data.files.map(fileView));
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
    box.hidden = true; // a run in your own checkout, or a removed workspace: nothing to show
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
