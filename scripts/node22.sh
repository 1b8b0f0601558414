# Sourced by scripts/mcp-conformance.sh and scripts/readme-tour.sh: Node 22 from the npm
# registry (npm package `node`) in .tools/node22 (ignored by git), installed once.
#
# `capsid_node22 <tools-dir>` sets $node to the Node 22 binary and puts its folder first on
# PATH, so npm and npx (whichever version is on PATH) then run on Node 22 too. It returns 1,
# having said why on stderr, when npm is missing or the registry cannot be reached; the
# callers exit 3 then ("the tooling could not be installed"), and scripts/test.sh decides
# whether that is fatal. npm writes only under the tools folder: its cache, no update checks,
# no audit or funding calls.

CAPSID_NODE_VERSION=22.23.3

capsid_npm_env() {
  local tools=$1
  export npm_config_cache="$tools/npm-cache" npm_config_update_notifier=false \
    npm_config_audit=false npm_config_fund=false npm_config_fetch_retries=1 \
    npm_config_fetch_timeout=30000 NO_COLOR=1
}

# The `node` package links its platform package's binary to node_modules/node/bin/node in a
# preinstall script; should npm refuse to run it, the platform package itself is installed.
capsid_find_node22() {
  local tools=$1 candidate
  for candidate in "$tools"/node22/node_modules/node/bin/node "$tools"/node22/node_modules/node-*/bin/node; do
    if [ -x "$candidate" ] && [ "$("$candidate" --version 2>/dev/null)" = "v$CAPSID_NODE_VERSION" ]; then
      node=$candidate
      return 0
    fi
  done
  return 1
}

capsid_node22() {
  local tools=$1 arch platform_pkg
  capsid_npm_env "$tools"
  node=
  if ! capsid_find_node22 "$tools"; then
    if ! command -v npm >/dev/null; then
      echo "node22: npm is not on PATH (any version bootstraps Node $CAPSID_NODE_VERSION)" >&2
      return 1
    fi
    echo "node22: installing node@$CAPSID_NODE_VERSION into ${tools##*/}/node22"
    rm -rf "$tools/node22"
    mkdir -p "$tools"
    npm install --prefix "$tools/node22" --no-save "node@$CAPSID_NODE_VERSION" >"$tools/node22.log" 2>&1 || true
    if ! capsid_find_node22 "$tools"; then
      case "$(uname -m)" in x86_64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
      platform_pkg="node-$(uname -s | tr '[:upper:]' '[:lower:]')-$arch"
      npm install --prefix "$tools/node22" --no-save --ignore-scripts "$platform_pkg@$CAPSID_NODE_VERSION" \
        >>"$tools/node22.log" 2>&1 || true
      if ! capsid_find_node22 "$tools"; then
        tail -n 20 "$tools/node22.log" >&2
        echo "node22: could not install Node $CAPSID_NODE_VERSION from the npm registry" >&2
        return 1
      fi
    fi
  fi
  PATH="$(dirname "$node"):$PATH"
  export PATH
}
