#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) against the fixture
# server tests/src/bin/mcp_fixture.rs, which serves on capsid's own transport configuration
# (capsid_http::transport_config), once in the default stateless mode and once in session mode.
#
# Installs Node 22 (npm package `node`) and the pinned suite versions into .tools/ (ignored by
# git) unless already there, then per mode runs: 0.1.16 `--suite active`, and 0.2.0-alpha.12
# `--requirements 2025-11-25` and `--requirements 2026-07-28`. Results (checks.json per
# scenario, console output, summary.txt) go to target/mcp-conformance/. Expected failures are
# the committed baselines tests/conformance/<mode>-<run>.yml. Then alpha's `authorization`
# scenarios run against capsid's own authorization server (the fixture's --oauth-redirect
# mode), with curl as the browser; they must both pass.
#
# Exit status: 0 all passed (or failed only as baselined); 1 a failure; 3 the tooling could not
# be installed (no npm, or no npm registry): scripts/test.sh decides whether that is fatal.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

SUITE_STABLE=0.1.16
SUITE_ALPHA=0.2.0-alpha.12
tools="$root/.tools"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
out="$target/mcp-conformance"
fixture_bin="$target/debug/mcp_fixture"
baselines="$root/tests/conformance"

say() { printf 'mcp-conformance: %s\n' "$*"; }
tooling_failed() { say "CANNOT INSTALL TOOLING: $*" >&2; exit 3; }

# --- Node 22 ------------------------------------------------------------------------------
# shellcheck source=scripts/node22.sh
source "$root/scripts/node22.sh"
capsid_node22 "$tools" || tooling_failed "could not install Node $CAPSID_NODE_VERSION from the npm registry"

# --- the suite ------------------------------------------------------------------------------
suite_js() { echo "$tools/conformance/$1/node_modules/@modelcontextprotocol/conformance/dist/index.js"; }
for version in "$SUITE_STABLE" "$SUITE_ALPHA"; do
  manifest="$tools/conformance/$version/node_modules/@modelcontextprotocol/conformance/package.json"
  if [ -f "$(suite_js "$version")" ] && grep -q "\"version\": \"$version\"" "$manifest"; then
    continue
  fi
  say "installing @modelcontextprotocol/conformance@$version into .tools/conformance/$version"
  rm -rf "$tools/conformance/$version"
  npm install --prefix "$tools/conformance/$version" --ignore-scripts \
    "@modelcontextprotocol/conformance@$version" >"$tools/conformance-$version.log" 2>&1 \
    || { tail -n 20 "$tools/conformance-$version.log" >&2; tooling_failed "could not install @modelcontextprotocol/conformance@$version"; }
done

# --- the fixture ----------------------------------------------------------------------------
# Built as `cargo test --workspace` builds it (capsid-tests' integration tests make cargo build
# its binaries), so after that step of scripts/test.sh this is a no-op: a separate
# `cargo build -p capsid-tests` would resolve other features (dev-dependencies) and recompile
# much of the dependency tree.
say "building the fixture (cargo test --workspace --no-run)"
cargo test --workspace --locked --no-run --quiet

rm -rf "$out"
mkdir -p "$out"
fixture_pid=
stop_fixture() {
  local i
  if [ -n "$fixture_pid" ]; then
    # A SIGTERM that reaches the child before it has exec'd the fixture is taken by the
    # forked shell and lost, so ask again, and then insist, rather than wait forever.
    for i in $(seq 1 50); do
      kill "$fixture_pid" 2>/dev/null || break
      # Gone, or a zombie waiting for the `wait` below.
      case "$(ps -o stat= -p "$fixture_pid" 2>/dev/null)" in "" | Z*) break ;; esac
      sleep 0.1
    done
    kill -9 "$fixture_pid" 2>/dev/null || true
    wait "$fixture_pid" 2>/dev/null || true
    fixture_pid=
  fi
}
trap stop_fixture EXIT

# Starts the fixture in mode $1 and sets $url once it listens.
start_fixture() {
  local mode=$1 flag=() port= i
  [ "$mode" = sessions ] && flag=(--sessions)
  "$fixture_bin" --port 0 "${flag[@]}" >"$out/fixture-$mode.out" 2>"$out/fixture-$mode.err" &
  fixture_pid=$!
  for i in $(seq 1 100); do
    # The shell creates the file in the background child: it may not exist yet, which is no
    # failure (under `set -e` a failing substitution would end the script).
    port=$(awk '/^LISTENING /{print $2; exit}' "$out/fixture-$mode.out" 2>/dev/null || true)
    [ -n "$port" ] && break
    kill -0 "$fixture_pid" 2>/dev/null || { cat "$out/fixture-$mode.err" >&2; say "the fixture exited" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$port" ] || { say "the fixture did not report a port" >&2; exit 1; }
  url="http://127.0.0.1:$port/mcp"
}

# --- the runs -------------------------------------------------------------------------------
# Each run: <id> <suite version> <suite arguments...>
runs=(
  "$SUITE_STABLE-active|$SUITE_STABLE|--suite active"
  "2025-11-25|$SUITE_ALPHA|--requirements 2025-11-25"
  "2026-07-28|$SUITE_ALPHA|--requirements 2026-07-28"
)
failed=()
summary="$out/summary.txt"
: >"$summary"
started=$SECONDS
for mode in stateless sessions; do
  start_fixture "$mode"
  say "$mode mode: fixture at $url"
  for run in "${runs[@]}"; do
    IFS='|' read -r id version args <<<"$run"
    dir="$out/$mode/$id"
    mkdir -p "$dir"
    baseline="$baselines/$mode-$id.yml"
    extra=()
    [ -f "$baseline" ] && extra=(--expected-failures "$baseline")
    # shellcheck disable=SC2086 # $args is a fixed list of words from the table above
    cmd=("$node" "$(suite_js "$version")" server --url "$url" $args -o "$dir/results" "${extra[@]}")
    printf '%s\n' "conformance@$version server --url $url $args ${extra[*]}" >"$dir/command.txt"
    status=0
    "${cmd[@]}" >"$dir/console.txt" 2>&1 || status=$?
    sed -i 's/\x1b\[[0-9;]*m//g' "$dir/console.txt"
    baselined=
    [ -f "$baseline" ] && baselined=$(sed -nE 's/^ *- *([^:# ]+).*/\1/p' "$baseline" | tr '\n' ' ')
    # Scenarios a requirement set runs without scoring them.
    nslist=
    requirements="$(dirname "$(suite_js "$version")")/../requirements/$id.yaml"
    [ -f "$requirements" ] && nslist=$(sed -nE 's/^ *- scenario: *([^ ]+).*/\1/p' "$requirements" | tr '\n' ' ')
    # Scenarios with a WARNING check (the console counts those as neither passed nor failed).
    warned=$(grep -l '"status": "WARNING"' "$dir"/results/server-*/checks.json 2>/dev/null \
      | sed -E 's|.*/server-(.*)-[0-9]{4}-[0-9]{2}-[0-9]{2}T[^/]*/checks.json|\1|' | tr '\n' ' ' || true)
    # The console has one line per scenario, "✓ name: N passed, M failed", and lists the
    # failing not-scored ones as "  ✗ name (reason)" after "Not scored for ...".
    awk -v mode="$mode" -v id="$id" -v version="$version" -v status="$status" -v baselined=" $baselined" -v warned=" $warned" -v nslist=" $nslist" '
      /^(✓|✗) [^ ]+: [0-9]+ passed, [0-9]+ failed/ {
        name = $2; sub(/:$/, "", name); n++
        if (index(warned, " " name " ")) warn[++nw] = name
        if ($1 == "✗") bad[++nb] = name
        else if ($3 + $5 > 0) pass++
        else if (!index(warned, " " name " ")) empty[++ne] = name
      }
      /^Not scored for/ { ns = 1; nsline = $0 }
      ns && /^ +✗ / { notscored[$2] = $3 }
      /^Total: / { total = $0; sub(/^Total: /, "", total) }
      END {
        printf "%-9s %-12s suite %-15s exit=%s scenarios=%d passed=%d failed=%d warned=%d not-applicable=%d (checks: %s)\n", mode, id, version, status, n, pass, nb, nw, ne, total
        if (nsline != "") printf "    %s\n", nsline
        for (i = 1; i <= nb; i++) {
          why = "UNEXPECTED"
          if (bad[i] in notscored) why = "not scored " notscored[bad[i]]
          else if (index(baselined, " " bad[i] " ")) why = "baselined"
          printf "    failed: %s [%s]\n", bad[i], why
        }
        for (i = 1; i <= ne; i++) printf "    not applicable (no check passed or failed): %s\n", empty[i]
        for (i = 1; i <= nw; i++) {
          why = "not baselined"
          if (warn[i] in notscored || index(nslist, " " warn[i] " ")) why = "not scored"
          else if (index(baselined, " " warn[i] " ")) why = "baselined"
          printf "    warning: %s [%s]\n", warn[i], why
        }
      }' "$dir/console.txt" | tee -a "$summary"
    if [ "$status" -ne 0 ] || ! grep -qE '^(✓|✗) ' "$dir/console.txt"; then
      failed+=("$mode/$id")
      grep -A40 -E '^Unexpected failures|^Stale' "$dir/console.txt" | sed 's/^/    | /' >&2 || true
    fi
  done
  stop_fixture
done
# --- the authorization server ---------------------------------------------------------------
# alpha's `conformance authorization` tests capsid's own AS (the real router, --oauth-redirect
# mode of the fixture): `authorization-server-metadata-endpoint`, and `authorization-code-grant`,
# which prints an authorize URL and waits for the browser at 127.0.0.1:<port>/callback. curl
# plays the browser: the consent page (its CSRF cookie and hidden fields), then the redirects
# through the fixture's fake GitHub back to capsid's /callback and on to the suite.
auth_dir="$out/authorization"
mkdir -p "$auth_dir"
cb_port=$(( 20000 + RANDOM % 20000 ))
"$fixture_bin" --port 0 --oauth-redirect "http://127.0.0.1:$cb_port/callback" \
  >"$auth_dir/fixture.out" 2>"$auth_dir/fixture.err" &
fixture_pid=$!
port=
for i in $(seq 1 100); do
  port=$(awk '/^LISTENING /{print $2; exit}' "$auth_dir/fixture.out" 2>/dev/null || true)
  [ -n "$port" ] && break
  kill -0 "$fixture_pid" 2>/dev/null || { cat "$auth_dir/fixture.err" >&2; say "the OAuth fixture exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { say "the OAuth fixture did not report a port" >&2; exit 1; }
client_id=$(awk '/^CLIENT_ID /{print $2; exit}' "$auth_dir/fixture.out")
issuer="http://127.0.0.1:$port"
printf '%s\n' "conformance@$SUITE_ALPHA authorization --url $issuer --client-id $client_id --resource $issuer/mcp -p $cb_port" >"$auth_dir/command.txt"
"$node" "$(suite_js "$SUITE_ALPHA")" authorization --url "$issuer" --client-id "$client_id" \
  --resource "$issuer/mcp" -p "$cb_port" -o "$auth_dir/results" >"$auth_dir/console.txt" 2>&1 &
suite_pid=$!
authorize_url=
for i in $(seq 1 300); do
  authorize_url=$(grep -m1 -E "^$issuer/authorize\?" "$auth_dir/console.txt" || true)
  # The URL is printed before the suite's callback listener is up; wait for both.
  [ -n "$authorize_url" ] && grep -q '^Callback server started' "$auth_dir/console.txt" && break
  kill -0 "$suite_pid" 2>/dev/null || break
  sleep 0.1
done
browser_status=0
if [ -n "$authorize_url" ]; then
  jar="$auth_dir/cookies.txt"
  curl -sS -c "$jar" -b "$jar" -o "$auth_dir/consent.html" "$authorize_url" || browser_status=$?
  form=()
  while IFS= read -r field; do
    form+=(--data-urlencode "$field")
  done < <(grep -oE 'type="hidden" name="[^"]+" value="[^"]*"' "$auth_dir/consent.html" \
    | sed -E 's/.*name="([^"]+)" value="([^"]*)"/\1=\2/')
  curl -sS -L --max-redirs 5 -c "$jar" -b "$jar" -o "$auth_dir/landing.txt" "${form[@]}" \
    --data-urlencode "decision=approve" "$issuer/authorize" || browser_status=$?
else
  say "the suite printed no authorize URL" >&2
fi
suite_status=0
wait "$suite_pid" || suite_status=$?
sed -i 's/\x1b\[[0-9;]*m//g' "$auth_dir/console.txt"
stop_fixture
auth_passed=$(grep -cE '^ *✓' "$auth_dir/console.txt" || true)
auth_failed=$(grep -cE '^ *✗' "$auth_dir/console.txt" || true)
printf '%-9s %-12s suite %-15s exit=%s passed=%s failed=%s (browser exit=%s)\n' authz as-server "$SUITE_ALPHA" \
  "$suite_status" "$auth_passed" "$auth_failed" "$browser_status" | tee -a "$summary"
grep -E '^ *(✓|✗)' "$auth_dir/console.txt" | sed 's/^ */    /' | tee -a "$summary" || true
if [ "$suite_status" -ne 0 ] || [ "$browser_status" -ne 0 ] || [ "$auth_passed" -lt 2 ]; then
  failed+=("authorization")
  sed 's/^/    | /' "$auth_dir/console.txt" >&2
fi

say "suite runs took $((SECONDS - started))s; results in ${out#"$root"/}"

if [ "${#failed[@]}" -gt 0 ]; then
  say "FAILED: ${failed[*]} (see target/mcp-conformance/<mode>/<run>/console.txt)" >&2
  exit 1
fi
say "all conformance runs passed (failures only as baselined in tests/conformance/)"
