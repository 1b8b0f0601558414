#!/usr/bin/env bash
# The README's tour, run as written (scripts/readme-tour.mjs says how the commands are taken
# from README.md and checked): `capsid serve` on a free port and a fresh folder, the mint into
# CAPSID_KEY, the namespace, the MCP Inspector commands and the curl commands.
#
# Installs Node 22 (npm package `node`, scripts/node22.sh) and the Inspector the README names
# (into npx's cache under .tools/) unless already there, and runs the tour with the `capsid`
# binary that `cargo test --workspace` builds first on PATH. Results go to
# target/readme-tour/.
#
# Exit status: 0 the tour ran as written; 1 a step failed or printed something of another
# shape; 3 the tooling could not be installed (no npm, or no npm registry): scripts/test.sh
# decides whether that is fatal.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

tools="$root/.tools"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

say() { printf 'readme-tour: %s\n' "$*"; }
tooling_failed() { say "CANNOT INSTALL TOOLING: $*" >&2; exit 3; }

# shellcheck source=scripts/node22.sh
source "$root/scripts/node22.sh"
capsid_node22 "$tools" || tooling_failed "could not install Node $CAPSID_NODE_VERSION from the npm registry"

# The Inspector exactly as the README runs it (`npx <package>@<version>`), fetched once.
inspector=$(grep -oE 'npx @modelcontextprotocol/inspector@[0-9][^ ]*' README.md | sort -u)
[ "$(printf '%s\n' "$inspector" | wc -l)" -eq 1 ] \
  || { say "the README names more than one Inspector: $inspector" >&2; exit 1; }
package=${inspector#npx }
if ! npm exec --yes --package="$package" -- true >"$tools/inspector.log" 2>&1; then
  tail -n 20 "$tools/inspector.log" >&2
  tooling_failed "could not install $package from the npm registry"
fi

# Built as `cargo test --workspace` builds it, so after that step of scripts/test.sh this is a
# no-op (see scripts/mcp-conformance.sh).
say "building capsid (cargo test --workspace --no-run)"
cargo test --workspace --locked --no-run --quiet
export PATH="$target/debug:$PATH"
[ "$(command -v capsid)" = "$target/debug/capsid" ] || { say "capsid is not $target/debug/capsid" >&2; exit 1; }

exec "$node" "$root/scripts/readme-tour.mjs" "$root/README.md" "$target/readme-tour"
