#!/usr/bin/env bash
# Mutation testing of the core's rules with cargo-mutants: each mutant (one operator, constant or
# return value changed) must make some capsid-core test fail. The files are listed in
# .cargo/mutants.toml; only capsid-core's own tests judge (`--lib`).
#
#   scripts/mutants.sh [--bar PCT] [FILE...]   every mutant of FILE... (default: the rule files the
#                                             score in ARCHITECTURE.md is kept for); prints the
#                                             score and exits 1 below PCT (default 97)
#   scripts/mutants.sh --diff BASE [--cap N]   only the mutants in lines changed since BASE (at
#                                             most N of them, default 10, a rotating shard when
#                                             there are more); exits 1 on any surviving mutant
#   scripts/mutants.sh --bounded [--cap N]     what scripts/test.sh runs: --diff HEAD~1, or a
#                                             rotating shard of the rule files when the clone
#                                             has no parent commit
#
# A full run copies the tree and builds the `mutants` profile (safe beside an editor); --diff and
# --bounded mutate the checked-out tree in place, reuse the warm dev build of `cargo test`, and
# check afterwards that no mutant was left behind. Installs cargo-mutants from crates.io when it
# is missing. Results stay in target/mutants/.
set -euo pipefail
cd "$(dirname "$0")/.."

MUTANTS_VERSION=27.1.0
bar=97
cap=10
base=""
bounded=false
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bar) bar="$2"; shift 2 ;;
    --cap) cap="$2"; shift 2 ;;
    --diff) base="$2"; shift 2 ;;
    --bounded) bounded=true; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "mutants: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done

if ! cargo mutants --version >/dev/null 2>&1; then
  echo "mutants: installing cargo-mutants $MUTANTS_VERSION from crates.io"
  cargo install cargo-mutants --locked --version "$MUTANTS_VERSION"
fi

if $bounded; then
  if git rev-parse --verify --quiet 'HEAD~1^{commit}' >/dev/null; then
    base=HEAD~1
  else
    echo "mutants: this clone has no parent commit; testing a rotating shard of the rule files"
  fi
fi

# Every rule file of the core: what --diff and --bounded look for changes in.
rule_globs=(
  capsid-core/src/scope.rs 'capsid-core/src/scope/**/*.rs' capsid-core/src/guards.rs
  capsid-core/src/tools.rs 'capsid-core/src/tools/**/*.rs' capsid-core/src/paths.rs
  capsid-core/src/caller.rs 'capsid-core/src/jobs/**/*.rs' 'capsid-core/src/autonomy/**/*.rs'
  'capsid-core/src/docs/**/*.rs' 'capsid-core/src/improve/**/*.rs'
  'capsid-core/src/skills/**/*.rs' 'capsid-core/src/checkmarks/**/*.rs'
  'capsid-core/src/intake/**/*.rs'
  capsid-core/src/drive/push_policy.rs capsid-core/src/drive/ledger.rs
  capsid-core/src/drive/box_plan.rs capsid-core/src/drive/egress.rs
  capsid-core/src/drive/verdict.rs capsid-core/src/drive/judge.rs capsid-core/src/drive/gate.rs
)
if [ ${#files[@]} -eq 0 ] && [ -n "$base" ]; then
  files=("${rule_globs[@]}")
fi

# The rule files of issue 21's measurement and wave 3's (issue 53); a bare run scores these.
if [ ${#files[@]} -eq 0 ] && [ -z "$base" ]; then
  files=(
    capsid-core/src/scope.rs capsid-core/src/guards.rs capsid-core/src/tools.rs
    capsid-core/src/paths.rs capsid-core/src/caller.rs capsid-core/src/jobs/state.rs
    capsid-core/src/jobs/signature.rs capsid-core/src/jobs/lease.rs
    capsid-core/src/jobs/requirements.rs capsid-core/src/autonomy/gates.rs
    capsid-core/src/drive/push_policy.rs capsid-core/src/drive/ledger.rs
    capsid-core/src/drive/box_plan.rs capsid-core/src/drive/egress.rs
    capsid-core/src/drive/verdict.rs capsid-core/src/drive/judge.rs capsid-core/src/drive/gate.rs
    capsid-core/src/jobs/run_credential.rs capsid-core/src/jobs/budget.rs
    capsid-core/src/intake/policy.rs
  )
fi

out=target/mutants
mkdir -p "$out"
# Incremental builds: a mutant rebuilds one crate's test harness, not the stack.
export CARGO_INCREMENTAL=1
args=(-p capsid-core --no-shuffle --baseline skip --timeout 120 --output "$out")
in_place=false
if [ -n "$base" ] || $bounded; then
  in_place=true
  args+=(--in-place)
  before=$(git diff -- capsid-core/src | sha256sum)
  untracked_before=$(git ls-files --others --exclude-standard -- capsid-core | sort)
else
  args+=(--profile mutants)
fi
for f in "${files[@]}"; do args+=(-f "$f"); done

shard_of() { # shard_of TOTAL: the --shard argument covering at most $cap mutants, rotating by commit
  local shards=$(( ($1 + cap - 1) / cap ))
  local k=$(( 16#$(git rev-parse --short=6 HEAD) % shards ))
  echo "mutants: $1 mutants; testing shard $k of $shards (at most $cap)" >&2
  echo "$k/$shards"
}

if [ -n "$base" ]; then
  diff_file="$out/changes.diff"
  if ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
    echo "mutants: $base is not a commit in this clone (a shallow clone?); nothing to compare" >&2
    exit 2
  fi
  git diff "$base" -- capsid-core/src >"$diff_file"
  if [ ! -s "$diff_file" ]; then
    echo "mutants: capsid-core/src is unchanged since $base; no mutant to test"
    exit 0
  fi
  args+=(--in-diff "$diff_file")
  total=$(cargo mutants "${args[@]}" --list 2>/dev/null | wc -l)
  if [ "$total" -eq 0 ]; then
    echo "mutants: the change since $base touches no rule file; no mutant to test"
    exit 0
  fi
  echo "mutants: the change since $base"
  if [ "$total" -gt "$cap" ]; then
    args+=(--shard "$(shard_of "$total")")
  else
    echo "mutants: $total mutants"
  fi
elif $bounded; then
  total=$(cargo mutants "${args[@]}" --list 2>/dev/null | wc -l)
  args+=(--shard "$(shard_of "$total")")
fi

started=$(date +%s)
status=0
if $bounded; then
  # cargo-mutants reverts the mutant in the tree when interrupted; SIGINT lets it.
  timeout -s INT "${CAPSID_MUTANTS_SECONDS:-540}" cargo mutants "${args[@]}" || status=$?
  if [ "$status" -eq 124 ]; then
    echo "mutants: the bounded run passed ${CAPSID_MUTANTS_SECONDS:-540} s and was stopped" >&2
    git diff --quiet -- capsid-core/src || git diff --stat -- capsid-core/src >&2
    exit 124
  fi
else
  cargo mutants "${args[@]}" || status=$?
fi
elapsed=$(( $(date +%s) - started ))
if $in_place; then
  # A mutant that fails a property test leaves a proptest-regressions file for the mutated
  # code; those are not regressions of the real code, so they go.
  comm -13 <(echo "$untracked_before") <(git ls-files --others --exclude-standard -- capsid-core | sort) |
    grep '/proptest-regressions/' | while read -r f; do rm -f -- "$f"; done || true
fi
if $in_place && [ "$(git diff -- capsid-core/src | sha256sum)" != "$before" ]; then
  echo "mutants: capsid-core/src differs from before the run: a mutant may be left in the tree" >&2
  git diff --stat -- capsid-core/src >&2
  exit 1
fi

# Exit codes of cargo-mutants: 0 all caught, 2 some missed, 3 some timed out, 4 baseline failed.
outcomes="$out/mutants.out/outcomes.json"
if [ ! -f "$outcomes" ]; then
  echo "mutants: cargo-mutants left no outcomes (exit $status)" >&2
  exit 1
fi
read -r caught missed timeout unviable < <(python3 - "$outcomes" <<'EOF'
import json, sys
counts = {"CaughtMutant": 0, "MissedMutant": 0, "Timeout": 0, "Unviable": 0}
for o in json.load(open(sys.argv[1]))["outcomes"]:
    summary = o.get("summary")
    if summary in counts:
        counts[summary] += 1
print(counts["CaughtMutant"], counts["MissedMutant"], counts["Timeout"], counts["Unviable"])
EOF
)
viable=$((caught + missed + timeout))
echo "mutants: $(date -u +%Y-%m-%d) caught $caught, missed $missed, timed out $timeout, unviable $unviable, in ${elapsed} s"
if [ "$missed" -gt 0 ]; then
  echo "mutants: survivors (each needs a test of the rule it breaks, or a reason it is equivalent):"
  sed 's/^/  /' "$out/mutants.out/missed.txt"
fi
if [ -n "$base" ] || $bounded; then
  [ "$missed" -eq 0 ] || exit 1
  exit 0
fi
if [ "$viable" -eq 0 ]; then
  echo "mutants: no viable mutant" >&2
  exit 1
fi
# A timeout is caught: the mutant did not pass the tests.
score=$(python3 -c "print(f'{100 * ($caught + $timeout) / $viable:.1f}')")
echo "mutants: score ${score}% of $viable viable mutants (bar ${bar}%)"
python3 -c "import sys; sys.exit(0 if ($caught + $timeout) * 100 >= $bar * $viable else 1)"
