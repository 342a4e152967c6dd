// A run's diff as DOM: one collapsible block per file, each line a text node (run text never
// becomes markup), files longer than LONG_DIFF_LINES collapsed. No diff renderer library.
import { el } from "./common.js";

export const LONG_DIFF_LINES = 300; // a file's diff longer than this starts collapsed

export function statusLabel(f) {
  if (f.status === "renamed" || f.status === "copied") return `${f.status} from ${f.oldPath}`;
  return f.status;
}

export function fileView(f) {
  const lines = f.hunks.reduce((n, h) => n + h.lines.length + 1, 0);
  const head = el("summary", { class: "diff-file-head" },
    el("span", { class: `diff-status st-${f.status}`, text: statusLabel(f) }), " ",
    el("span", { class: "diff-path", text: f.path }), " ",
    f.binary ? el("span", { class: "diff-note", text: "binary" }) : null,
    f.large ? el("span", { class: "diff-note", text: "large file (not diffed)" }) : null,
    !f.binary && !f.large ? el("span", { class: "diff-counts", text: `+${f.added} −${f.removed}` }) : null,
    lines > LONG_DIFF_LINES ? el("span", { class: "diff-note", text: ` ${lines} lines, collapsed` }) : null);
  const pre = el("pre", { class: "diff-body" });
  for (const hunk of f.hunks) {
    pre.append(el("span", { class: "diff-hunk", text: `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@ ${hunk.header}\n` }));
    for (const line of hunk.lines) {
      const kind = line[0] === "+" ? "add" : line[0] === "-" ? "del" : line[0] === "\\" ? "note" : "ctx";
      pre.append(el("span", { class: `diff-line diff-${kind}`, text: line + "\n" }));
    }
  }
  return el("details", { class: "diff-file", "data-path": f.path, open: lines <= LONG_DIFF_LINES && f.hunks.length > 0 }, head, pre);
}

