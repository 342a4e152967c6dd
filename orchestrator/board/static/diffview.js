// A run's diff as DOM: one collapsible block per file (files longer than LONG_DIFF_LINES start
// collapsed and are only built when opened), each line a row with its old and new line number,
// syntax highlighted by highlight.js (vendor/highlight/, its prebuilt "common" bundle, BSD-3;
// see docs/review.md). Run text never becomes markup: highlight.js's output is parsed in an inert
// <template> and rebuilt from its text and its hljs-* class names only.
import { el } from "./common.js";

export const LONG_DIFF_LINES = 300; // a file's diff longer than this starts collapsed

let hljs = null; // the page still shows plain diffs if the highlighter cannot load
try {
  hljs = (await import("./vendor/highlight/highlight.min.js")).default;
} catch {
  hljs = null;
}

const BY_NAME = { Makefile: "makefile", Dockerfile: "dockerfile", CMakeLists: "cmake" };

// The highlight.js language of a path (by extension or well-known name), or null.
export function languageOf(path) {
  if (!hljs) return null;
  const name = path.split("/").pop() || "";
  const base = name.split(".")[0];
  const dot = name.lastIndexOf(".");
  const ext = dot > 0 ? name.slice(dot + 1).toLowerCase() : "";
  for (const candidate of [BY_NAME[base], ext]) {
    if (candidate && hljs.getLanguage(candidate)) return candidate;
  }
  return null;
}

const CLASS = /^(hljs-[\w-]+|[\w-]+_)$/; // hljs-keyword, and sub-scopes such as function_

// `text` highlighted as `language`, one DocumentFragment per line (null: not highlighted).
function highlightedLines(text, language) {
  if (!hljs || !language) return null;
  let html;
  try {
    html = hljs.highlight(text, { language, ignoreIllegals: true }).value;
  } catch {
    return null;
  }
  const inert = document.createElement("template");
  inert.innerHTML = html; // parsed, never attached: rebuilt below from text and class names
  const lines = [document.createDocumentFragment()];
  const walk = (node, classes) => {
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) {
        child.data.split("\n").forEach((part, i) => {
          if (i > 0) lines.push(document.createDocumentFragment());
          if (!part) return;
          let leaf = document.createTextNode(part);
          for (let c = classes.length - 1; c >= 0; c--) {
            const span = document.createElement("span");
            span.className = classes[c];
            span.append(leaf);
            leaf = span;
          }
          lines[lines.length - 1].append(leaf);
        });
      } else if (child.nodeType === Node.ELEMENT_NODE) {
        const kept = [...child.classList].filter((c) => CLASS.test(c)).join(" ");
        walk(child, kept ? [...classes, kept] : classes);
      }
    }
  };
  walk(inert.content, []);
  return lines;
}

export function statusLabel(f) {
  if (f.status === "renamed" || f.status === "copied") return `${f.status} from ${f.oldPath}`;
  return f.status;
}

// One hunk's rows: [kind, prefix, text, oldNo, newNo], numbered from the hunk's starts.
function hunkRows(hunk) {
  const rows = [];
  let oldNo = hunk.oldStart;
  let newNo = hunk.newStart;
  for (const line of hunk.lines) {
    const first = line[0];
    const text = line.slice(1);
    if (first === "+") rows.push(["add", "+", text, null, newNo++]);
    else if (first === "-") rows.push(["del", "-", text, oldNo++, null]);
    else if (first === "\\") rows.push(["note", "\\", text, null, null]);
    else rows.push(["ctx", " ", text, oldNo++, newNo++]);
  }
  return rows;
}

// The rows of one hunk as DOM. `onLine(path, line, event)`: a new-side line number was clicked.
function hunkView(path, hunk, language, onLine) {
  const rows = hunkRows(hunk);
  const oldSide = rows.filter((r) => r[0] === "del" || r[0] === "ctx").map((r) => r[2]);
  const newSide = rows.filter((r) => r[0] === "add" || r[0] === "ctx").map((r) => r[2]);
  const oldLit = highlightedLines(oldSide.join("\n"), language);
  const newLit = highlightedLines(newSide.join("\n"), language);
  let o = 0;
  let n = 0;
  const out = [el("div", { class: "diff-hunk", text: `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@ ${hunk.header}\n` })];
  for (const [kind, prefix, text, oldNo, newNo] of rows) {
    let lit = null;
    if (kind === "del") lit = oldLit && oldLit[o++];
    else if (kind === "add") lit = newLit && newLit[n++];
    else if (kind === "ctx") {
      lit = newLit && newLit[n];
      o++;
      n++;
    }
    const code = el("span", { class: `diff-line diff-${kind}` }, prefix);
    code.append(lit || document.createTextNode(text), "\n");
    // With onLine, a new-side number is a button for the keyboard too: in the tab order, named
    // for what it does, Enter or Space picks it (Shift: the range from the last one picked).
    const number = newNo === null
      ? el("span", { class: "ln ln-new" })
      : el("span", {
        class: `ln ln-new${onLine ? " pick" : ""}`,
        "data-line": newNo,
        role: onLine ? "button" : null,
        tabindex: onLine ? "0" : null,
        "aria-label": onLine ? `comment on line ${newNo} of ${path}` : null,
        title: onLine ? `comment on line ${newNo} (shift-click or shift-Enter: a range)` : null,
        text: String(newNo),
        onclick: onLine ? (e) => onLine(path, newNo, e) : null,
        onkeydown: onLine ? (e) => {
          if (e.key !== "Enter" && e.key !== " ") return;
          e.preventDefault(); // Space would scroll the page
          onLine(path, newNo, e);
        } : null,
      });
    out.push(el("div", { class: `diff-row row-${kind}`, "data-new": newNo ?? "" },
      el("span", { class: "ln ln-old", text: oldNo === null ? "" : String(oldNo) }), number, code));
  }
  return out;
}

// A file's block. `opts.onLine(path, line, event)` makes new-side line numbers clickable (the run
// page's comments); `opts.open(path)` may say whether the person left it open or closed;
// `opts.later(node, build)` defers building an open file's rows (see nearScreen).
export function fileView(f, opts = {}) {
  const lines = f.hunks.reduce((n, h) => n + h.lines.length + 1, 0);
  const long = lines > LONG_DIFF_LINES;
  const language = languageOf(f.path);
  const head = el("summary", { class: "diff-file-head" },
    el("span", { class: `diff-status st-${f.status}`, text: statusLabel(f) }), " ",
    el("span", { class: "diff-path", text: f.path }), " ",
    f.binary ? el("span", { class: "diff-note", text: "binary" }) : null,
    f.large ? el("span", { class: "diff-note", text: "large file (not diffed)" }) : null,
    !f.binary && !f.large ? el("span", { class: "diff-counts", text: `+${f.added} −${f.removed}` }) : null,
    long ? el("span", { class: "diff-note", text: ` ${lines} lines, collapsed` }) : null);
  const body = el("div", { class: "diff-body", "data-language": language || "" });
  const remembered = opts.open ? opts.open(f.path) : undefined;
  const open = remembered ?? (!long && f.hunks.length > 0);
  const node = el("details", { class: "diff-file", "data-path": f.path, open }, head, body);
  let built = false;
  const build = () => {
    if (built) return;
    built = true;
    for (const hunk of f.hunks) body.append(...hunkView(f.path, hunk, language, opts.onLine));
  };
  if (open && opts.later) opts.later(node, build); // built when it comes near the screen
  else if (open) build();
  let shown = open; // a details made open fires a toggle too: only a change counts
  node.addEventListener("toggle", () => {
    if (node.open === shown) return;
    shown = node.open;
    if (node.open) build();
    if (opts.toggled) opts.toggled(f.path, node.open);
  });
  return node;
}

// For a diff of many files: the first EAGER_FILES open files are built at once, the others when
// they come within a few screens of the viewport. `onBuilt` runs after each deferred build.
export const EAGER_FILES = 30;
export function nearScreen(onBuilt) {
  const pending = new Map();
  const seen = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      const build = pending.get(entry.target);
      pending.delete(entry.target);
      seen.unobserve(entry.target);
      if (build) build();
      onBuilt();
    }
  }, { rootMargin: "2000px 0px" });
  let count = 0;
  return {
    later(node, build) {
      if (count++ < EAGER_FILES) {
        build();
        return;
      }
      pending.set(node, build);
      seen.observe(node);
    },
    reset() {
      seen.disconnect();
      pending.clear();
      count = 0;
    },
  };
}
