#!/usr/bin/env bash
# The one test command: formatting, lints, the architecture boundary, and every test of the
# workspace against SQLite and a throwaway PostgreSQL cluster. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's name and start (seconds since the script began); their durations are printed
# when the script ends, passed or failed.
step_names=()
step_starts=()
step() {
  printf '\n==> %s\n' "$*"
  step_names+=("$*")
  step_starts+=("$SECONDS")
}
durations() {
  local status=${1:-$?} i end
  [ ${#step_names[@]} -gt 0 ] || return "$status"
  echo
  echo "step durations (total $((SECONDS / 60)) min $((SECONDS % 60)) s):"
  for i in "${!step_names[@]}"; do
    if [ $((i + 1)) -lt ${#step_names[@]} ]; then end=${step_starts[$((i + 1))]}; else end=$SECONDS; fi
    printf '  %5d s  %s\n' "$((end - step_starts[i]))" "${step_names[$i]%% (*}"
  done
  return "$status"
}
trap durations EXIT

# Incremental caches are several gigabytes for this workspace and a CI run is always cold: off.
export CARGO_INCREMENTAL=0
# Free disk, printed at each heavy step: a full disk shows up as Postgres "out of room" errors.
disk() { df -h --output=avail,target . /tmp 2>/dev/null | sed 's/^/disk: /'; }

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo doc (the crates' own documentation; warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet

step "boundary: capsid-core does no IO"
scripts/check-boundary.sh

# Installs Debian packages that are missing (CI starts from a clean machine with only the
# package registries reachable).
apt_install() {
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo -n)
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@"
}

step "postgres"
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && [ -z "${CAPSID_TEST_POSTGRES_URL:-}" ]; then
  echo "postgres: installing Debian's PostgreSQL 15 server"
  apt_install postgresql-15 || echo "postgres: apt-get install postgresql-15 failed" >&2
fi
# shellcheck source=scripts/postgres.sh
source scripts/postgres.sh
# Stop the cluster at exit, then print the steps' durations (the exit status is kept).
trap 'rc=$?; capsid_pg_stop || true; durations "$rc" || true; exit "$rc"' EXIT
if [ -n "${CAPSID_TEST_POSTGRES_URL:-}" ]; then
  echo "postgres: using CAPSID_TEST_POSTGRES_URL from the environment"
elif ! capsid_pg_start; then
  if [ "${CI:-}" = "true" ]; then
    echo "postgres: could not start a cluster, and CI requires the Postgres cases to run" >&2
    exit 1
  fi
  echo "postgres: NOT AVAILABLE - the Postgres cases will report that they did not run" >&2
fi

step "moto_server (the S3-compatible server the S3 tests start on loopback)"
# PyPI's moto runs an S3 API offline; the blob-store and backup tests spawn it themselves.
if ! command -v moto_server >/dev/null 2>&1; then
  pip install --quiet 'moto[server]' || echo "moto: pip install 'moto[server]' failed" >&2
fi
if command -v moto_server >/dev/null 2>&1; then
  echo "moto_server: $(command -v moto_server)"
elif [ "${CI:-}" = "true" ]; then
  echo "moto_server: not installed, and CI requires the S3 cases to run" >&2
  exit 1
else
  echo "moto_server: NOT AVAILABLE - the S3 cases will report that they did not run" >&2
fi

step "the MCP Python SDK (the subscription tests watch with it: subscriptions/listen and resources/subscribe)"
# A pinned SDK in its own virtual environment under .tools, so nothing system-wide changes.
CAPSID_PY_MCP_VERSION=2.3.0
if [ ! -x .tools/py/bin/python ] || ! .tools/py/bin/python -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$CAPSID_PY_MCP_VERSION')" 2>/dev/null; then
  python3 -m venv .tools/py && .tools/py/bin/pip install --quiet "mcp==$CAPSID_PY_MCP_VERSION" \
    || echo "python sdk: pip install mcp==$CAPSID_PY_MCP_VERSION failed" >&2
fi
if .tools/py/bin/python -c "import mcp" 2>/dev/null; then
  export CAPSID_TEST_PYTHON="$PWD/.tools/py/bin/python"
  echo "python sdk: mcp $CAPSID_PY_MCP_VERSION in $CAPSID_TEST_PYTHON"
elif [ "${CI:-}" = "true" ]; then
  echo "python sdk: not installed, and CI requires the subscription cases to run" >&2
  exit 1
else
  echo "python sdk: NOT AVAILABLE - the subscription cases will report that they did not run" >&2
fi

step "server.json against the MCP registry's published server schema"
# PyPI's skillsaw bundles the registry's released server schemas byte for byte; the check
# validates with them, so nothing is fetched from the schema's URL.
CAPSID_SKILLSAW_VERSION=0.22.0
if [ -x .tools/py/bin/python ] && ! .tools/py/bin/python -c "import importlib.metadata as m, sys; sys.exit(m.version('skillsaw') != '$CAPSID_SKILLSAW_VERSION')" 2>/dev/null; then
  .tools/py/bin/pip install --quiet "skillsaw==$CAPSID_SKILLSAW_VERSION" \
    || echo "server.json: pip install skillsaw==$CAPSID_SKILLSAW_VERSION failed" >&2
fi
if [ -x .tools/py/bin/python ] && .tools/py/bin/python -c "import skillsaw" 2>/dev/null; then
  .tools/py/bin/python scripts/check-server-json.py server.json
elif [ "${CI:-}" = "true" ]; then
  echo "server.json: skillsaw (the bundled registry schemas) is not installed, and CI requires the check" >&2
  exit 1
else
  echo "server.json: NOT CHECKED - skillsaw could not be installed" >&2
fi

step "headless Chromium (the console test renders the page in it)"
if ! command -v chromium >/dev/null 2>&1 && [ -z "${CAPSID_CHROMIUM:-}" ]; then
  apt_install chromium
fi
"${CAPSID_CHROMIUM:-chromium}" --version

step "git, tmux and curl (the drive tests run real git worktrees, an agent in tmux, and curl inside a box)"
if ! command -v git >/dev/null 2>&1 || ! command -v tmux >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
  sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo -n)
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq git tmux curl
fi
git --version
tmux -V

step "bubblewrap (the box tests start real boxes: user, PID and network namespaces)"
if ! command -v bwrap >/dev/null 2>&1; then
  apt_install bubblewrap || echo "bubblewrap: apt-get install bubblewrap failed" >&2
fi
if command -v bwrap >/dev/null 2>&1; then
  bwrap --version
elif [ "${CI:-}" = "true" ]; then
  echo "bubblewrap: not installed, and CI requires the box cases to run" >&2
  exit 1
else
  echo "bubblewrap: NOT AVAILABLE - the box cases will report that they did not run" >&2
fi

step "Claude Code (the drive and hook tests run the real CLI against a fake model API)"
# Pinned: its hook protocol and headless behaviour changed across 2.1 releases. The package's
# native binary is an npm package too (@anthropic-ai/claude-code-linux-x64), so nothing else is
# downloaded; it goes to .tools/claude-code (ignored by git). The tests find it there.
CAPSID_CLAUDE_VERSION=2.1.332
claude_bin=.tools/claude-code/node_modules/.bin/claude
if [ "$("$claude_bin" --version 2>/dev/null | cut -d' ' -f1)" != "$CAPSID_CLAUDE_VERSION" ]; then
  # shellcheck source=scripts/node22.sh
  source scripts/node22.sh
  capsid_npm_env "$PWD/.tools"
  rm -rf .tools/claude-code
  mkdir -p .tools
  npm install --prefix .tools/claude-code --no-save "@anthropic-ai/claude-code@$CAPSID_CLAUDE_VERSION" \
    >.tools/claude-code.log 2>&1 || tail -n 20 .tools/claude-code.log >&2
fi
if [ "$(HOME=$(mktemp -d) "$claude_bin" --version 2>/dev/null | cut -d' ' -f1)" = "$CAPSID_CLAUDE_VERSION" ]; then
  echo "claude: $CAPSID_CLAUDE_VERSION at $claude_bin"
elif [ "${CI:-}" = "true" ]; then
  echo "claude: could not install @anthropic-ai/claude-code@$CAPSID_CLAUDE_VERSION, and CI requires the real-agent cases to run" >&2
  exit 1
else
  echo "claude: NOT AVAILABLE - the real-agent cases will report that they did not run" >&2
fi

step "Codex CLI (the drive tests run the real CLI against a fake Responses API, beside Claude Code)"
# Pinned like Claude Code: its hook trust and exec --json events are what the Codex runtime
# reads. The native binary is the optional npm package @openai/codex-linux-x64.
CAPSID_CODEX_VERSION=0.171.0
codex_bin=.tools/codex/node_modules/.bin/codex
if [ "$("$codex_bin" --version 2>/dev/null | awk '{print $2}')" != "$CAPSID_CODEX_VERSION" ]; then
  # shellcheck source=scripts/node22.sh
  source scripts/node22.sh
  capsid_npm_env "$PWD/.tools"
  rm -rf .tools/codex
  mkdir -p .tools
  npm install --prefix .tools/codex --no-save "@openai/codex@$CAPSID_CODEX_VERSION" \
    >.tools/codex.log 2>&1 || tail -n 20 .tools/codex.log >&2
fi
if [ "$("$codex_bin" --version 2>/dev/null | awk '{print $2}')" = "$CAPSID_CODEX_VERSION" ]; then
  echo "codex: $CAPSID_CODEX_VERSION at $codex_bin"
elif [ "${CI:-}" = "true" ]; then
  echo "codex: could not install @openai/codex@$CAPSID_CODEX_VERSION, and CI requires the real-agent cases to run" >&2
  exit 1
else
  echo "codex: NOT AVAILABLE - the Codex cases will report that they did not run" >&2
fi

step "cargo test"
disk
# A full disk shows up as a linker killed by SIGBUS: say how much was left when it fails.
cargo test --workspace --locked || {
  status=$?
  echo "cargo test failed (exit $status); free disk now:" >&2
  disk >&2
  exit "$status"
}

step "mutation testing: the core rules this change touched (scripts/mutants.sh --bounded)"
# The mutants of capsid-core's rule files in the lines changed since the parent commit (a
# rotating shard when there are more than ten, or when the clone has no parent), each judged by
# the core's own tests; a survivor fails the run. cargo-mutants is stopped after nine minutes.
scripts/mutants.sh --bounded

step "fuzz: build every cargo-fuzz target (stable, no sanitizer), run each for a bounded time"
# The replica (capsid-cli/tests/cli/replicas.rs) and fault (tests/tests/suite/operations) tests ran
# above with the rest of cargo test. Fuzzing: cargo-fuzz from crates.io when missing; new
# inputs go to fuzz/corpus (ignored), the committed seeds in fuzz/seeds are only read.
disk
scripts/fuzz.sh "${CAPSID_FUZZ_SECONDS:-10}"

step "MCP conformance suite (fixture on capsid's transport configuration)"
# Exit 3 means Node 22 or the suite could not be installed (no npm or no npm registry).
conformance_status=0
scripts/mcp-conformance.sh || conformance_status=$?
if [ "$conformance_status" -eq 3 ] && [ "${CI:-}" != "true" ]; then
  echo "!!! mcp-conformance: NOT RUN - could not install Node 22 or the suite from the npm registry" >&2
  echo "!!! the MCP transport is UNTESTED by the official conformance suite in this run" >&2
elif [ "$conformance_status" -ne 0 ]; then
  exit "$conformance_status"
fi

step "the README's tour, run as written (scripts/readme-tour.sh)"
# Exit 3 means Node 22 or the Inspector could not be installed (no npm or no npm registry).
tour_status=0
scripts/readme-tour.sh || tour_status=$?
if [ "$tour_status" -eq 3 ] && [ "${CI:-}" != "true" ]; then
  echo "!!! readme-tour: NOT RUN - could not install Node 22 or the Inspector from the npm registry" >&2
  echo "!!! the README's tour is UNTESTED in this run" >&2
elif [ "$tour_status" -ne 0 ]; then
  exit "$tour_status"
fi

step "release binary: built as users build it, its size printed (at most 30 MB)"
# The release profile (Cargo.toml) strips symbols and links with fat LTO; the bound keeps a
# dependency that doubles the binary from landing unnoticed.
disk
cargo build --release --locked -p capsid-cli
# Where cargo put it: CARGO_TARGET_DIR or a configured build.target-dir moves it from target/.
target_dir=$(cargo metadata --format-version 1 --no-deps --locked | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
release_bytes=$(stat -c %s "${target_dir:-target}/release/capsid")
# 30 MB in the decimal sense, the stricter reading of the issue's bound.
release_limit=30000000
echo "capsid release binary: ${release_bytes} bytes ($((release_bytes / 1000 / 1000)) MB; limit ${release_limit})"
if [ "$release_bytes" -gt "$release_limit" ]; then
  echo "the release binary is over 30 MB" >&2
  exit 1
fi

echo
echo "all checks passed"
