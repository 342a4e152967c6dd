"""Landing a run: its workspace's changes as a commit on ``ringleader/<task>-<runtime>``, then
onto the person's branch — or, for a temporary copy, the changed files copied back.

Nothing the person has is touched until the result is known to apply cleanly: the commit, and
the merged or cherry-picked result, are computed as git objects (``git merge-tree
--write-tree``, or a cherry-pick in a temporary worktree when the target does not contain the
run's starting commit); every refusal comes before the first ref or file is changed. Refused,
with one :class:`~orchestrator.core.errors.ApplyRefusedError`: uncommitted changes in the
person's working tree (when the target branch is checked out there), a target branch checked
out in another worktree (named), a conflict (the files listed), untracked files the result
would overwrite, and — for a copy — an original file that changed since the snapshot.

Modes: ``squash`` (default) puts one commit on the target (the run's commit itself when the
target has not moved since the run started); ``merge`` joins the run's branch with a merge commit
(a fast-forward when the target has not moved). ``push``/``pr`` publish the branch instead of
landing it locally (a pull request is how it lands then).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Literal

import attrs
import trio

from orchestrator.core.errors import ApplyRefusedError, ReviewError, redact_secrets
from orchestrator.core.events import now_ms
from orchestrator.engine.eventlog import EventLog
from orchestrator.engine.review.diff import WorkspaceDiff, workspace_diff, workspace_tree
from orchestrator.engine.review.git import Checkout, git
from orchestrator.engine.review.records import CHECKOUT_KIND, ResolvedRun, checkout_of

__all__ = [
    "ApplyOptions",
    "ApplyResult",
    "apply_and_record",
    "apply_run",
    "branch_name",
    "commit_message",
    "comparison_row",
]

Mode = Literal["squash", "merge"]

FALLBACK_IDENTITY = ("ringleader", "ringleader@localhost")
"""Who commits when neither ``--author`` nor the repository's git configuration says."""


@attrs.frozen
class ApplyOptions:
    onto: str | None = None
    mode: Mode = "squash"
    message: str | None = None
    author: str | None = None
    """``Name <email>`` (default: the repository's configured identity)."""
    push: str | None = None
    """Push the run's branch to this remote (instead of landing it locally)."""
    pr: bool = False
    """Open a pull request with ``gh`` (pushes to ``push`` or ``origin`` first)."""
    comparison: str = ""
    """The run's row of the comparison table, for the pull request's body."""


@attrs.frozen
class ApplyResult:
    branch: str | None
    commit: str | None
    files: tuple[str, ...]
    landed_on: str | None = None
    landed: str | None = None
    """The commit now at the tip of ``landed_on``."""
    how: str = ""
    pushed_to: str | None = None
    pr_url: str | None = None
    pr_command: str | None = None
    """The command to run, when ``gh`` is missing or not logged in."""
    copied_to: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "branch": self.branch,
            "commit": self.commit,
            "files": list(self.files),
            "landedOn": self.landed_on,
            "landed": self.landed,
            "how": self.how,
            "pushedTo": self.pushed_to,
            "prUrl": self.pr_url,
            "prCommand": self.pr_command,
            "copiedTo": self.copied_to,
        }


def branch_name(run: ResolvedRun) -> str:
    """``ringleader/<task>-<runtime>`` (characters git refuses in a ref replaced by ``-``)."""
    raw = f"{run.workspace.task_id}-{run.workspace.runtime_id}"
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in raw).strip(".-") or "run"
    while ".." in safe:
        safe = safe.replace("..", ".")
    return f"ringleader/{safe}"


def _first_line(text: str, limit: int = 72) -> str:
    for line in text.splitlines():
        line = " ".join(line.split())
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def _outcome(run: ResolvedRun) -> dict[str, Any]:
    last = run.last
    return dict(last.outcome or {}) if last is not None else {}


def _prompt(run: ResolvedRun) -> str:
    for row in run.runs:
        title = (row.outcome or {}).get("title")
        if isinstance(title, str) and title:
            return title
    return ""


def _cost(run: ResolvedRun) -> str:
    total = 0.0
    known = False
    for row in run.runs:
        usd = (row.outcome or {}).get("costUsd")
        if isinstance(usd, int | float):
            total += float(usd)
            known = True
    return f"${total:.4f}" if known else "unknown"


def commit_message(run: ResolvedRun) -> str:
    """The summary's first line as the subject, then the prompt, runtime, run and cost."""
    summary = str(_outcome(run).get("summary") or "")
    prompt = _prompt(run)
    subject = _first_line(summary) or _first_line(prompt) or "changes"
    body = [
        f"Prompt: {prompt}" if prompt else "",
        f"Runtime: {run.workspace.runtime_id} ({run.workspace.label})",
        f"Run: {run.key}",
        f"Cost: {_cost(run)}",
    ]
    return f"{subject}\n\n" + "\n".join(line for line in body if line) + "\n"


def _identity(top: Path, author: str | None) -> dict[str, str]:
    env: dict[str, str] = {}
    if author is not None:
        name, _, rest = author.partition("<")
        email = rest.rstrip(">").strip()
        if not name.strip() or not email:
            raise ReviewError(f"--author {author!r} is not 'Name <email>'")
        env.update({"GIT_AUTHOR_NAME": name.strip(), "GIT_AUTHOR_EMAIL": email})
    if git(["var", "GIT_COMMITTER_IDENT"], cwd=top, check=False).returncode != 0:
        name, email = FALLBACK_IDENTITY
        env.setdefault("GIT_AUTHOR_NAME", name)
        env.setdefault("GIT_AUTHOR_EMAIL", email)
        env.update({"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email})
    return env


def _out(result: subprocess.CompletedProcess[bytes]) -> str:
    return result.stdout.decode("utf-8", "surrogateescape").strip()


def _worktrees(top: Path) -> dict[str, Path]:
    """Branch ref → the worktree it is checked out in."""
    text = _out(git(["worktree", "list", "--porcelain"], cwd=top))
    found: dict[str, Path] = {}
    where: Path | None = None
    for line in text.splitlines():
        if line.startswith("worktree "):
            where = Path(line[len("worktree ") :])
        elif line.startswith("branch ") and where is not None:
            found[line[len("branch ") :]] = where
    return found


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _listed(files: list[str] | tuple[str, ...], limit: int = 10) -> str:
    shown = ", ".join(files[:limit])
    return shown + (f" and {len(files) - limit} more" if len(files) > limit else "")


def _free_branch(top: Path, wanted: str, commit: str) -> tuple[str, str | None]:
    """A branch name for the run's commit: ``wanted``, or ``wanted-2``… when ``wanted`` holds
    something else. Second value: the commit of a branch that already holds the same change
    (the run applied before: reuse it), else ``None``."""
    tree = _out(git(["rev-parse", f"{commit}^{{tree}}"], cwd=top))
    parent = _out(git(["rev-parse", f"{commit}^"], cwd=top))
    name = wanted
    for n in range(2, 100):
        have = git(["rev-parse", "--verify", "-q", f"refs/heads/{name}"], cwd=top, check=False)
        if have.returncode != 0:
            return name, None
        held = _out(have)
        same = _out(git(["rev-parse", f"{held}^{{tree}}", f"{held}^"], cwd=top, check=False))
        if same.split() == [tree, parent]:
            return name, held
        name = f"{wanted}-{n}"
    raise ReviewError(f"too many branches named {wanted}-N; delete some")


def _merge(top: Path, ours: str, theirs: str) -> tuple[str | None, list[str]]:
    """``git merge-tree --write-tree``: the merged tree, or the conflicted files."""
    done = git(
        ["merge-tree", "--write-tree", "--name-only", "-z", ours, theirs], cwd=top, check=False
    )
    if done.returncode not in (0, 1):
        raise ReviewError(f"git merge-tree failed: {done.stderr.decode(errors='replace').strip()}")
    parts = done.stdout.split(b"\0")
    tree = parts[0].decode()
    if done.returncode == 0:
        return tree, []
    files: list[str] = []
    for part in parts[1:]:
        if not part:
            break
        name = part.decode("utf-8", "surrogateescape")
        if name not in files:
            files.append(name)
    return None, files


def _cherry_pick_tree(top: Path, onto: str, commit: str) -> tuple[str | None, list[str]]:
    """Cherry-pick ``commit`` onto ``onto`` in a temporary worktree (the target does not contain
    the run's starting commit): the resulting tree, or the conflicted files."""
    folder = Path(tempfile.mkdtemp(prefix="ringleader-apply-"))
    where = folder / "tree"
    try:
        git(["worktree", "add", "--detach", "--quiet", str(where), onto], cwd=top)
        picked = git(["cherry-pick", "--no-commit", commit], cwd=where, check=False)
        if picked.returncode != 0:
            names = _out(git(["diff", "--name-only", "--diff-filter=U"], cwd=where, check=False))
            return None, names.splitlines() or [
                "(git: " + picked.stderr.decode(errors="replace").strip() + ")"
            ]
        return _out(git(["write-tree"], cwd=where)), []
    finally:
        git(["worktree", "remove", "--force", str(where)], cwd=top, check=False)
        shutil.rmtree(folder, ignore_errors=True)


def _untracked_in_way(top: Path, old: str, new: str) -> list[str]:
    added = _out(git(["diff-tree", "-r", "--name-only", "--diff-filter=A", old, new], cwd=top))
    return [p for p in added.splitlines() if p and os.path.lexists(top / p)]


def _publish(
    top: Path, run: ResolvedRun, branch: str, target: str | None, opts: ApplyOptions
) -> tuple[str | None, str | None, str | None]:
    """Push the branch (and open the pull request): (remote, PR URL, command to run)."""
    remote = opts.push or "origin"
    pushed = git(
        ["push", "--quiet", remote, f"refs/heads/{branch}:refs/heads/{branch}"],
        cwd=top,
        check=False,
        hooks=True,  # the person's own publishing: their pre-push hook runs, as with git push
    )
    if pushed.returncode != 0:
        lines = pushed.stderr.decode(errors="replace").strip().splitlines()
        why = next(
            (x for x in lines if x.startswith(("fatal:", "error:"))), lines[-1] if lines else ""
        )
        raise ReviewError(
            redact_secrets(
                f"could not push {branch} to {remote}: {why or 'git push failed'} "
                f"(the branch {branch} is kept)"
            )
        )
    if not opts.pr:
        return remote, None, None
    outcome = _outcome(run)
    title = _first_line(str(outcome.get("summary") or "")) or _first_line(_prompt(run)) or branch
    body = "\n".join(
        [
            f"**Prompt:** {_prompt(run)}",
            "",
            f"**Summary:** {outcome.get('summary') or '(none)'}",
            "",
            f"**Runtime:** {run.workspace.runtime_id} ({run.workspace.label}) · **cost:** {_cost(run)}",
            "",
            f"**Comparison:** {opts.comparison}" if opts.comparison else "",
            "",
            f"Run `{run.key}`, landed by ringleader.",
        ]
    ).strip()
    argv = ["gh", "pr", "create", "--head", branch, "--title", title, "--body", body]
    if target:
        argv[3:3] = ["--base", target]
    gh = shutil.which("gh")
    if gh is not None:
        status = subprocess.run([gh, "auth", "status"], cwd=top, capture_output=True, check=False)
        if status.returncode == 0:
            made = subprocess.run([gh, *argv[1:]], cwd=top, capture_output=True, check=False)
            if made.returncode != 0:
                why = made.stderr.decode(errors="replace").strip().splitlines()
                raise ReviewError(
                    f"gh pr create failed: {redact_secrets(why[-1]) if why else 'no output'}"
                )
            lines = _out(made).splitlines()
            return remote, lines[-1] if lines else "", None
    return remote, None, shlex.join(argv)


def _apply_git(run: ResolvedRun, checkout: Checkout, opts: ApplyOptions) -> ApplyResult:
    top_text = _out(git(["rev-parse", "--show-toplevel"], cwd=Path(run.workspace.origin)))
    top = Path(top_text)
    diff = workspace_diff(checkout)
    if not diff.files:
        raise ReviewError(f"run {run.key} changed nothing in its workspace; nothing to apply")
    tree = workspace_tree(checkout)
    env = _identity(top, opts.author)
    message = opts.message or commit_message(run)
    commit = _out(
        git(["commit-tree", tree, "-p", checkout.base], cwd=top, env=env, input=message.encode())
    )
    branch, held = _free_branch(top, branch_name(run), commit)
    reuse = held is not None
    commit = held or commit
    files = tuple(sorted(diff.paths()))
    publishing = opts.push is not None or opts.pr
    target: str | None = opts.onto
    if target is None:
        head = git(["symbolic-ref", "-q", "--short", "HEAD"], cwd=top, check=False)
        if head.returncode != 0:
            if not publishing:
                raise ApplyRefusedError(
                    f"{top} is on a detached HEAD: pass --onto BRANCH to say where run "
                    f"{run.key} lands"
                )
        else:
            target = _out(head)
    if publishing:
        if (
            target is not None
            and git(
                ["rev-parse", "--verify", "-q", f"refs/heads/{target}"], cwd=top, check=False
            ).returncode
            != 0
        ):
            raise ApplyRefusedError(f"there is no branch {target!r} in {top}")
        if not reuse:
            git(["update-ref", f"refs/heads/{branch}", commit, ""], cwd=top)
        remote, url, command = _publish(top, run, branch, target, opts)
        return ApplyResult(
            branch, commit, files, how="published", pushed_to=remote, pr_url=url, pr_command=command
        )
    assert target is not None
    ref = f"refs/heads/{target}"
    found = git(["rev-parse", "--verify", "-q", ref], cwd=top, check=False)
    if found.returncode != 0:
        raise ApplyRefusedError(f"there is no branch {target!r} in {top}")
    old = _out(found)
    holders = _worktrees(top)
    holder = holders.get(ref)
    in_place = holder is not None and _same(holder, top)
    if holder is not None and not in_place:
        raise ApplyRefusedError(
            f"branch {target!r} is checked out in another worktree, {holder}: switch that "
            f"worktree to another branch, or apply from it (cd {holder} && ringleader apply …)"
        )
    if in_place:
        status = git(["status", "--porcelain", "-z", "--untracked-files=no"], cwd=top).stdout
        names = [
            e[3:].decode("utf-8", "surrogateescape") for e in status.split(b"\0") if e[2:3] == b" "
        ]
        if names:
            raise ApplyRefusedError(
                f"your working tree {top} has uncommitted changes ({_listed(names)}): commit or "
                "stash them, then apply again; nothing was changed",
                files=tuple(names),
            )
    # the result, as objects only
    base_in_target = (
        git(["merge-base", "--is-ancestor", checkout.base, old], cwd=top, check=False).returncode
        == 0
    )
    if old == checkout.base:
        new, how = commit, "fast-forward" if opts.mode == "merge" else "squash"
    else:
        if opts.mode == "merge" or base_in_target:
            merged, conflicts = _merge(top, old, commit)
        else:
            merged, conflicts = _cherry_pick_tree(top, old, commit)
        if merged is None:
            raise ApplyRefusedError(
                f"run {run.key} conflicts with {target} in {len(conflicts)} file"
                f"{'s' if len(conflicts) != 1 else ''}: {_listed(conflicts)}; nothing was applied",
                files=tuple(conflicts),
            )
        if merged == _out(git(["rev-parse", f"{old}^{{tree}}"], cwd=top)):
            raise ReviewError(f"the changes of run {run.key} are already on {target}")
        if opts.mode == "merge":
            merge_msg = f"Merge {branch} (ringleader run {run.key})\n"
            new = _out(
                git(
                    ["commit-tree", merged, "-p", old, "-p", commit],
                    cwd=top,
                    env=env,
                    input=merge_msg.encode(),
                )
            )
            how = "merge"
        else:
            new = _out(
                git(["commit-tree", merged, "-p", old], cwd=top, env=env, input=message.encode())
            )
            how = "squash"
    if in_place:
        blocked = _untracked_in_way(top, old, new)
        if blocked:
            raise ApplyRefusedError(
                f"untracked files in {top} would be overwritten: {_listed(blocked)}; move them "
                "away, then apply again; nothing was changed",
                files=tuple(blocked),
            )
    # every check passed: the branch, then the target
    if not reuse:
        git(["update-ref", f"refs/heads/{branch}", commit, ""], cwd=top)
    if in_place:
        git(["merge", "--ff-only", "--quiet", new], cwd=top, what=f"fast-forwarding {target}")
    else:
        git(["update-ref", ref, new, old], cwd=top)
    return ApplyResult(branch, commit, files, landed_on=target, landed=new, how=how)


def _blob_ids(checkout: Checkout, paths: list[str]) -> dict[str, str]:
    if not paths:
        return {}
    out = checkout.run("ls-tree", "-r", "-z", checkout.base, "--", *paths).stdout
    found: dict[str, str] = {}
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        found[name.decode("utf-8", "surrogateescape")] = meta.split()[2].decode()
    return found


def _hash_files(checkout: Checkout, files: list[Path]) -> list[str]:
    if not files:
        return []
    out = checkout.run(
        "hash-object",
        "--no-filters",
        "--stdin-paths",
        input="\n".join(map(str, files)).encode() + b"\n",
    ).stdout.decode()
    return out.split()


def _apply_copy(run: ResolvedRun, checkout: Checkout, opts: ApplyOptions) -> ApplyResult:
    """Copy a temporary copy's changed files back into the directory it was copied from."""
    if opts.onto or opts.push or opts.pr or opts.mode != "squash":
        raise ReviewError(
            f"{run.workspace.origin} is not a git repository: apply copies the changed files "
            "back; --onto, --merge, --push and --pr need git"
        )
    origin = Path(run.workspace.origin)
    diff: WorkspaceDiff = workspace_diff(checkout)
    if not diff.files:
        raise ReviewError(f"run {run.key} changed nothing in its workspace; nothing to apply")
    # each path the run touched: its content at the snapshot and in the workspace (None: absent)
    was = [f.old_path or f.path for f in diff.files if f.status not in ("added", "copied")]
    blobs = _blob_ids(checkout, was)
    now = [f.path for f in diff.files if f.status != "deleted"]
    made = dict(zip(now, _hash_files(checkout, [checkout.root / p for p in now]), strict=True))
    wanted: dict[str, tuple[str | None, str | None]] = {}
    for f in diff.files:
        if f.status == "renamed" and f.old_path is not None:
            wanted[f.old_path] = (blobs.get(f.old_path), None)
            wanted[f.path] = (None, made[f.path])
        elif f.status in ("added", "copied"):
            wanted[f.path] = (None, made[f.path])
        elif f.status == "deleted":
            wanted[f.path] = (blobs.get(f.path), None)
        else:
            wanted[f.path] = (blobs.get(f.path), made[f.path])
    present = [p for p in wanted if (origin / p).is_file() and not (origin / p).is_symlink()]
    current: dict[str, str | None] = {
        p: ("other" if os.path.lexists(origin / p) else None) for p in wanted
    }
    current.update(zip(present, _hash_files(checkout, [origin / p for p in present]), strict=True))
    todo = [p for p, (_before, after) in wanted.items() if current[p] != after]
    changed = sorted(p for p in todo if current[p] != wanted[p][0])
    if changed:
        raise ApplyRefusedError(
            f"{origin} changed since the run's snapshot ({_listed(changed)}): nothing was copied",
            files=tuple(changed),
        )
    if not todo:
        raise ReviewError(f"the changes of run {run.key} are already in {origin}")
    for path in todo:
        target = origin / path
        if os.path.lexists(target):
            target.unlink()
        if wanted[path][1] is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(checkout.root / path, target, follow_symlinks=False)
    return ApplyResult(
        None, None, tuple(sorted(diff.paths())), how="copied back", copied_to=str(origin)
    )


def apply_run(run: ResolvedRun, opts: ApplyOptions) -> ApplyResult:
    """Land ``run`` (blocking: call it in a thread). See the module docstring.

    Raises:
        ApplyRefusedError: refused before anything of the person's changed.
        ReviewError: the run has no usable workspace, or git failed."""
    if run.workspace.kind == CHECKOUT_KIND:
        raise ApplyRefusedError(
            f"run {run.key} worked in your own checkout ({run.workspace.origin}): its changes are "
            "already there (see `ringleader diff`; commit them with git)"
        )
    checkout = checkout_of(run.workspace)
    if checkout.git_dir is not None:
        return _apply_copy(run, checkout, opts)
    return _apply_git(run, checkout, opts)


def comparison_row(run: ResolvedRun) -> str:
    """The run's row of the comparison table, for a pull request's body: label, outcome,
    tokens, cost, wall time."""
    last = run.last
    if last is None:
        return ""
    outcome = last.outcome or {}
    usage: dict[str, Any] = outcome.get("usage") or {}
    cost = outcome.get("costUsd")
    wall = (last.ended_ms - last.started_ms) / 1000 if last.ended_ms else None
    parts = [
        run.workspace.label,
        f"outcome {last.status}",
        f"tokens in {usage.get('inputTokens', '?')}",
        f"tokens out {usage.get('outputTokens', '?')}",
        f"cost {'unknown' if cost is None else f'${cost:.4f}'}",
        f"wall {'?' if wall is None else f'{wall:.1f}s'}",
    ]
    return " | ".join(parts)


async def apply_and_record(log: EventLog, run: ResolvedRun, opts: ApplyOptions) -> ApplyResult:
    """:func:`apply_run` in a thread, then the workspace marked applied in the event log (what
    ``ringleader workspaces`` shows and ``--prune`` removes). A run still running is refused."""
    if run.last is not None and run.last.status == "running":
        raise ApplyRefusedError(f"run {run.key} is still running; apply it once it has ended")
    if not opts.comparison:
        opts = attrs.evolve(opts, comparison=comparison_row(run))
    result = await trio.to_thread.run_sync(apply_run, run, opts)
    await log.mark_workspace(
        run.workspace.root, applied={**result.to_json(), "run": run.key, "atMs": now_ms()}
    )
    return result
