#!/usr/bin/env bash
# Install the real agent runtimes, pinned, isolated per runtime under .runtimes/ (git-ignored).
#
#   scripts/install-runtimes                    # all of them
#   scripts/install-runtimes claude-code codex  # a subset
#   scripts/install-runtimes acp-agents         # the five third-party ACP agents
#
# Runtimes: claude-code, codex, hermes, openclaw, and the ACP agents behind `--runtime acp:NAME`
# (docs/acp-agents.md): claude-agent-acp, codex-acp, opencode, qwen-code, gemini-cli. Idempotent: a runtime whose stamp file matches
# the pinned spec and whose binary exists is skipped, so a re-run takes seconds. Only the package
# registries (npm, PyPI) are contacted; no runtime is started except `--version` checks, run with
# their update checks and telemetry disabled.
#
# Layout (override the root with RINGLEADER_RUNTIMES_DIR; adapters/_runtimes.py reads the same):
#   .runtimes/claude-code/   npm prefix; native ELF: node_modules/@anthropic-ai/claude-code-linux-<arch>/claude
#   .runtimes/codex/         npm prefix; native musl binary: node_modules/@openai/codex-linux-<arch>/vendor/<triple>/bin/codex
#   .runtimes/hermes/venv/   Python venv (3.11–3.13) with hermes-agent[acp,anthropic]; bin/hermes
#   .runtimes/openclaw/node24/  npm prefix with Node 24 (npm package `node`); bin: node_modules/.bin/node
#   .runtimes/openclaw/app/     npm prefix with openclaw; bin: node_modules/.bin/openclaw (needs node 24 on PATH)
#   .runtimes/claude-agent-acp/ npm prefix; node script: node_modules/.bin/claude-agent-acp
#   .runtimes/codex-acp/        npm prefix; native binary: node_modules/@zed-industries/codex-acp-linux-<arch>/bin/codex-acp
#   .runtimes/opencode/         npm prefix; native binary: node_modules/opencode-linux-<arch>/bin/opencode
#   .runtimes/qwen-code/node24/ npm prefix with Node 24 (qwen needs Node >= 22)
#   .runtimes/qwen-code/app/    npm prefix; node script: node_modules/.bin/qwen (node 24 first on PATH)
#   .runtimes/gemini-cli/       npm prefix; node script: node_modules/.bin/gemini
#
# Pins (runtimes.md measured these exact versions; change them together with the adapters):
set -euo pipefail

CLAUDE_CODE_VERSION="2.1.330"
CODEX_VERSION="0.169.0"
HERMES_VERSION="0.19.0"
HERMES_EXTRAS="acp,anthropic"
OPENCLAW_VERSION="2026.9.6"
NODE24_VERSION="24.21.0"
CLAUDE_AGENT_ACP_VERSION="0.23.1"
CODEX_ACP_VERSION="0.16.0"
OPENCODE_VERSION="1.18.33"
QWEN_CODE_VERSION="0.24.4"
GEMINI_CLI_VERSION="0.61.0"

# `ringleader install` and scripts/install-runtimes both set RINGLEADER_RUNTIMES_DIR (a checkout's
# .runtimes/, else the per-user $XDG_DATA_HOME/ringleader/runtimes)
RT="${RINGLEADER_RUNTIMES_DIR:?set RINGLEADER_RUNTIMES_DIR (ringleader install sets it)}"
ACP_AGENTS=(claude-agent-acp codex-acp opencode qwen-code gemini-cli)
ALL=(claude-code codex hermes openclaw "${ACP_AGENTS[@]}")

# Keep npm quiet and offline from everything but the registry.
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
# Every `--version` check below runs with these: no telemetry, no update checks.
export DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 \
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
  OPENCLAW_NO_AUTO_UPDATE=1 \
  OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_SHARE=1

log() { printf '[install-runtimes] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

arch_npm() {  # npm's platform package suffix
  case "$(uname -m)" in
    x86_64 | amd64) echo x64 ;;
    aarch64 | arm64) echo arm64 ;;
    *) die "unsupported architecture $(uname -m)" ;;
  esac
}

# stamp_ok DIR SPEC BINARY: the runtime in DIR was installed with SPEC and BINARY is executable.
stamp_ok() {
  [[ -f "$1/.ringleader-installed" && "$(cat "$1/.ringleader-installed")" == "$2" && -x "$3" ]]
}
write_stamp() { printf '%s' "$2" >"$1/.ringleader-installed"; }

npm_install() {  # npm_install PREFIX SPEC...
  local prefix="$1"; shift
  mkdir -p "$prefix"
  # A package.json makes the prefix a project of its own (npm would otherwise walk up the tree).
  [[ -f "$prefix/package.json" ]] || printf '{"private": true}\n' >"$prefix/package.json"
  # (pipefail keeps npm's status; the filter drops a harmless warning about this machine's npmrc)
  npm install --prefix "$prefix" --no-audit --no-fund --no-save --loglevel=error "$@" 2>&1 \
    | { grep -v 'Unknown user config' || true; } >&2
}

timed() {  # timed NAME CMD...: run, then report seconds and size
  local name="$1"; shift
  local t0 ms
  t0=$(date +%s%N)
  "$@"
  ms=$((($(date +%s%N) - t0) / 1000000))
  log "$name: installed in $((ms / 1000)).$(((ms % 1000) / 100)) s, $(du -sh "$RT/$name" | cut -f1) on disk"
}

# ---------------------------------------------------------------- claude-code

claude_bin() { echo "$RT/claude-code/node_modules/@anthropic-ai/claude-code-linux-$(arch_npm)/claude"; }

install_claude_code() {
  local dir="$RT/claude-code" spec="@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"
  if stamp_ok "$dir" "$spec" "$(claude_bin)"; then log "claude-code: $spec already installed"; return; fi
  log "claude-code: installing $spec"
  # The platform package carries the native ELF; the package's own postinstall only hard-links it
  # to bin/claude.exe. We run the ELF directly, so install scripts are not needed.
  timed claude-code npm_install "$dir" "$spec"
  [[ -x "$(claude_bin)" ]] || die "claude-code: native binary missing at $(claude_bin)"
  write_stamp "$dir" "$spec"
}

# ---------------------------------------------------------------------- codex

codex_bin() {
  local triple
  case "$(arch_npm)" in x64) triple=x86_64-unknown-linux-musl ;; arm64) triple=aarch64-unknown-linux-musl ;; esac
  echo "$RT/codex/node_modules/@openai/codex-linux-$(arch_npm)/vendor/$triple/bin/codex"
}

install_codex() {
  local dir="$RT/codex" spec="@openai/codex@$CODEX_VERSION"
  if stamp_ok "$dir" "$spec" "$(codex_bin)"; then log "codex: $spec already installed"; return; fi
  log "codex: installing $spec"
  timed codex npm_install "$dir" "$spec"
  [[ -x "$(codex_bin)" ]] || die "codex: native binary missing at $(codex_bin)"
  write_stamp "$dir" "$spec"
}

# --------------------------------------------------------------------- hermes

hermes_bin() { echo "$RT/hermes/venv/bin/hermes"; }

pick_hermes_python() {  # Hermes needs Python >=3.11,<3.14
  local c
  for c in "${HERMES_PYTHON:-}" python3.11 python3.12 python3.13 python3; do
    [[ -n "$c" ]] || continue
    command -v "$c" >/dev/null 2>&1 || continue
    if "$c" -c 'import sys; raise SystemExit(not ((3, 11) <= sys.version_info[:2] < (3, 14)))' 2>/dev/null; then
      echo "$c"; return
    fi
  done
  die "hermes: needs Python 3.11–3.13 (set HERMES_PYTHON)"
}

install_hermes_impl() {
  local dir="$RT/hermes" py
  py="$(pick_hermes_python)"
  mkdir -p "$dir"
  [[ -x "$dir/venv/bin/python" ]] || "$py" -m venv "$dir/venv"
  # (the filter drops this machine's pip warnings about absent local index directories)
  "$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "hermes-agent[$HERMES_EXTRAS]==$HERMES_VERSION" 2>&1 \
    | { grep -v "^WARNING: Location 'file:" || true; } >&2
}

install_hermes() {
  local dir="$RT/hermes" spec="hermes-agent[$HERMES_EXTRAS]==$HERMES_VERSION"
  if stamp_ok "$dir" "$spec" "$(hermes_bin)"; then log "hermes: $spec already installed"; return; fi
  log "hermes: installing $spec"
  timed hermes install_hermes_impl
  [[ -x "$(hermes_bin)" ]] || die "hermes: binary missing at $(hermes_bin)"
  write_stamp "$dir" "$spec"
}

# ------------------------------------------------------------------- openclaw

node24_bin() { echo "$RT/openclaw/node24/node_modules/node/bin/node"; }
openclaw_bin() { echo "$RT/openclaw/app/node_modules/.bin/openclaw"; }

install_openclaw_impl() {
  local dir="$RT/openclaw"
  # Node 24 first (openclaw refuses Node 20: node:sqlite). The npm package `node` carries a real
  # node ELF in its platform package and links it as node_modules/node/bin/node.
  if [[ ! -x "$(node24_bin)" ]] || [[ "$("$(node24_bin)" --version 2>/dev/null)" != "v$NODE24_VERSION" ]]; then
    npm_install "$dir/node24" "node@$NODE24_VERSION"
  fi
  [[ "$("$(node24_bin)" --version)" == "v$NODE24_VERSION" ]] || die "openclaw: node $NODE24_VERSION not usable at $(node24_bin)"
  # npm 11 skips dependency install scripts; docs/runtimes.md §3.1: everything works without them.
  PATH="$(dirname "$(node24_bin)"):$PATH" npm_install "$dir/app" "openclaw@$OPENCLAW_VERSION"
}

install_openclaw() {
  local dir="$RT/openclaw" spec="openclaw@$OPENCLAW_VERSION+node@$NODE24_VERSION"
  if stamp_ok "$dir" "$spec" "$(openclaw_bin)" && [[ -x "$(node24_bin)" ]]; then
    log "openclaw: $spec already installed"; return
  fi
  log "openclaw: installing $spec (large: ~650 MB + 190 MB of Node 24)"
  mkdir -p "$dir"
  timed openclaw install_openclaw_impl
  [[ -x "$(openclaw_bin)" ]] || die "openclaw: binary missing at $(openclaw_bin)"
  write_stamp "$dir" "$spec"
}

# ----------------------------------------------------------------- ACP agents
# Each in its own npm prefix; `--runtime acp:NAME` (adapters/acp/presets.py) finds them there.

claude_agent_acp_bin() { echo "$RT/claude-agent-acp/node_modules/.bin/claude-agent-acp"; }
codex_acp_bin() { echo "$RT/codex-acp/node_modules/@zed-industries/codex-acp-linux-$(arch_npm)/bin/codex-acp"; }
opencode_bin() { echo "$RT/opencode/node_modules/opencode-linux-$(arch_npm)/bin/opencode"; }
qwen_node_bin() { echo "$RT/qwen-code/node24/node_modules/node/bin/node"; }
qwen_bin() { echo "$RT/qwen-code/app/node_modules/.bin/qwen"; }
gemini_bin() { echo "$RT/gemini-cli/node_modules/.bin/gemini"; }

install_npm_agent() {  # install_npm_agent NAME SPEC BINARY: one package in $RT/NAME
  local name="$1" spec="$2" bin="$3"
  if stamp_ok "$RT/$name" "$spec" "$bin"; then log "$name: $spec already installed"; return; fi
  log "$name: installing $spec"
  timed "$name" npm_install "$RT/$name" "$spec"
  [[ -x "$bin" ]] || die "$name: binary missing at $bin"
  write_stamp "$RT/$name" "$spec"
}

install_qwen_impl() {
  local dir="$RT/qwen-code"
  if [[ ! -x "$(qwen_node_bin)" ]] || [[ "$("$(qwen_node_bin)" --version 2>/dev/null)" != "v$NODE24_VERSION" ]]; then
    npm_install "$dir/node24" "node@$NODE24_VERSION"
  fi
  [[ "$("$(qwen_node_bin)" --version)" == "v$NODE24_VERSION" ]] || die "qwen-code: node $NODE24_VERSION not usable at $(qwen_node_bin)"
  PATH="$(dirname "$(qwen_node_bin)"):$PATH" npm_install "$dir/app" "@qwen-code/qwen-code@$QWEN_CODE_VERSION"
}

install_qwen() {
  local dir="$RT/qwen-code" spec="@qwen-code/qwen-code@$QWEN_CODE_VERSION+node@$NODE24_VERSION"
  if stamp_ok "$dir" "$spec" "$(qwen_bin)" && [[ -x "$(qwen_node_bin)" ]]; then
    log "qwen-code: $spec already installed"; return
  fi
  log "qwen-code: installing $spec"
  mkdir -p "$dir"
  timed qwen-code install_qwen_impl
  [[ -x "$(qwen_bin)" ]] || die "qwen-code: binary missing at $(qwen_bin)"
  write_stamp "$dir" "$spec"
}

install_acp_agent() {
  case "$1" in
    claude-agent-acp)
      install_npm_agent claude-agent-acp "@zed-industries/claude-agent-acp@$CLAUDE_AGENT_ACP_VERSION" "$(claude_agent_acp_bin)" ;;
    codex-acp) install_npm_agent codex-acp "@zed-industries/codex-acp@$CODEX_ACP_VERSION" "$(codex_acp_bin)" ;;
    opencode) install_npm_agent opencode "opencode-ai@$OPENCODE_VERSION" "$(opencode_bin)" ;;
    qwen-code) install_qwen ;;
    gemini-cli) install_npm_agent gemini-cli "@google/gemini-cli@$GEMINI_CLI_VERSION" "$(gemini_bin)" ;;
  esac
}

# ------------------------------------------------------------------- versions

first_line() {  # first_line CMD...: the first output line of CMD (no pipe into head: SIGPIPE + pipefail)
  local out
  out="$("$@" </dev/null 2>&1)" || log "warning: '$*' exited with status $?"
  printf '%s' "${out%%$'\n'*}"
}

report() {  # report RUNTIME: print where the binary is and its --version
  local v
  case "$1" in
    claude-code)
      v="$(first_line env HOME="$RT/claude-code" timeout 30 "$(claude_bin)" --version)"
      printf '%-12s %s\n             %s\n' claude-code "$(claude_bin)" "$v" ;;
    codex)
      mkdir -p "$RT/codex/home"  # Codex warns on every command when CODEX_HOME does not exist
      v="$(first_line env CODEX_HOME="$RT/codex/home" HOME="$RT/codex" timeout 30 "$(codex_bin)" --version)"
      printf '%-12s %s\n             %s\n' codex "$(codex_bin)" "$v" ;;
    hermes)
      # `hermes --version` checks PyPI for updates unless $HERMES_HOME/.update_check holds a fresh
      # answer for this version (cached 6 h); seed it so the check stays offline.
      mkdir -p "$RT/hermes/home"
      "$RT/hermes/venv/bin/python" - "$RT/hermes/home/.update_check" "$HERMES_VERSION" <<'PY'
import json, sys, time
with open(sys.argv[1], "w") as f:
    json.dump({"ts": time.time(), "behind": 0, "rev": None, "ver": sys.argv[2]}, f)
PY
      v="$(first_line env HERMES_HOME="$RT/hermes/home" HOME="$RT/hermes/home" timeout 60 "$(hermes_bin)" --version)"
      printf '%-12s %s\n             %s\n' hermes "$(hermes_bin)" "$v" ;;
    openclaw)
      mkdir -p "$RT/openclaw/state"
      v="$(first_line env PATH="$(dirname "$(node24_bin)"):$PATH" HOME="$RT/openclaw/state" \
        OPENCLAW_STATE_DIR="$RT/openclaw/state" timeout 60 "$(openclaw_bin)" --version)"
      printf '%-12s %s\n             %s (node %s at %s)\n' openclaw "$(openclaw_bin)" "$v" \
        "$("$(node24_bin)" --version)" "$(node24_bin)" ;;
    claude-agent-acp | codex-acp | opencode | qwen-code | gemini-cli)
      # the ACP agents print nothing useful without a model; the stamp names the version
      local bin
      case "$1" in
        claude-agent-acp) bin="$(claude_agent_acp_bin)" ;;
        codex-acp) bin="$(codex_acp_bin)" ;;
        opencode) bin="$(opencode_bin)" ;;
        qwen-code) bin="$(qwen_bin)" ;;
        gemini-cli) bin="$(gemini_bin)" ;;
      esac
      printf '%-12s %s\n             %s\n' "$1" "$bin" "$(cat "$RT/$1/.ringleader-installed")" ;;
  esac
}

main() {
  local want=()
  for a in "$@"; do
    case "$a" in
      -h | --help) usage; exit 0 ;;
      all) want+=("${ALL[@]}") ;;
      claude-code | codex | hermes | openclaw) want+=("$a") ;;
      claude-agent-acp | codex-acp | opencode | qwen-code | gemini-cli) want+=("$a") ;;
      acp-agents) want+=("${ACP_AGENTS[@]}") ;;
      claude) want+=(claude-code) ;;
      *) usage >&2; die "unknown runtime '$a' (known: ${ALL[*]})" ;;
    esac
  done
  [[ ${#want[@]} -gt 0 ]] || want=("${ALL[@]}")
  local seen=() r2
  for r2 in "${want[@]}"; do [[ " ${seen[*]-} " == *" $r2 "* ]] || seen+=("$r2"); done
  want=("${seen[@]}")
  mkdir -p "$RT"
  local r
  for r in "${want[@]}"; do
    case "$r" in
      claude-code) command -v npm >/dev/null || die "npm is required"; install_claude_code ;;
      codex) command -v npm >/dev/null || die "npm is required"; install_codex ;;
      hermes) install_hermes ;;
      openclaw) command -v npm >/dev/null || die "npm is required"; install_openclaw ;;
      *) command -v npm >/dev/null || die "npm is required"; install_acp_agent "$r" ;;
    esac
  done
  for r in "${want[@]}"; do report "$r"; done
}

main "$@"
