// The runs of one side-by-side task next to each other (GET /compare-data/TASK, the same facts
// as `ringleader compare --json`): each run's outcome, files and lines, then every file any of
// them touched — who changed it and whether they agree — and a run's diff on demand.
import { el, getJSON } from "./common.js";
import { fileView, nearScreen } from "./diffview.js";

const task = decodeURIComponent(location.pathname.slice("/compare/".length));
const notice = document.getElementById("notice");
const deferred = nearScreen(() => {}); // a diff of many files: built as it is scrolled to

function runLink(run) {
  if (!run.runKey) return el("span", { text: run.label });
  return el("a", { href: `/run/${encodeURIComponent(run.runKey)}${location.hash}`, text: run.label });
}

async function showDiff(run) {
  const box = document.getElementById("compare-diff");
  try {
    const data = await getJSON(`/runs/${encodeURIComponent(run.runKey)}/diff`);
    deferred.reset();
    box.replaceChildren(el("h2", { text: `${run.label}: ${data.totals.files} file(s), +${data.totals.added} −${data.totals.removed}` }),
      ...data.files.map((f) => fileView(f, { later: deferred.later })));
    box.dataset.run = run.label;
  } catch (e) {
    notice.textContent = String(e.message);
  }
}

async function load() {
  let data;
  try {
    data = await getJSON(`/compare-data/${encodeURIComponent(task)}`);
  } catch (e) {
    notice.dataset.error = "yes";
    notice.textContent = String(e.message);
    return;
  }
  document.getElementById("compare-title").textContent = `task ${data.task}: ${data.runs.length} runs`;
  document.title = `ringleader: compare ${data.task}`;
  document.getElementById("compare-runs").replaceChildren(
    el("tr", {}, ...["run", "runtime", "outcome", "files", "lines", ""].map((h) => el("th", { text: h }))),
    ...data.runs.map((run) => el("tr", { "data-label": run.label },
      el("td", {}, runLink(run)),
      el("td", { text: run.runtime }),
      el("td", { text: run.status }),
      el("td", { text: run.error ? "?" : String(run.files.length) }),
      el("td", { text: run.error ? run.error : `+${run.added} −${run.removed}` }),
      el("td", {}, run.runKey && !run.error
        ? el("button", { type: "button", class: "show-diff", onclick: () => showDiff(run), text: "diff" })
        : null))),
  );
  const labels = data.runs.map((r) => r.label);
  document.getElementById("compare-files").replaceChildren(
    el("tr", {}, el("th", { text: "file" }), ...labels.map((l) => el("th", { text: l })), el("th", { text: "runs agree?" })),
    ...data.files.map((f) => {
      const who = Object.keys(f.runs);
      const verdict = who.length === 1 ? `only ${who[0]}` : f.agree ? "agree (same content)" : "differ";
      return el("tr", { "data-path": f.path },
        el("td", { class: "diff-path", text: f.path }),
        ...labels.map((l) => el("td", { text: f.runs[l] ? `${f.runs[l].status} +${f.runs[l].added} −${f.runs[l].removed}` : "–" })),
        el("td", { class: f.agree ? "agree" : "differ", text: verdict }));
    }),
  );
}

load();
