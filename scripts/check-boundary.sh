#!/usr/bin/env bash
# The architecture's first invariant: capsid-core does no IO. It may not depend, directly or
# through anything it pulls in, on a database, HTTP, MCP or GitHub crate, nor on an async runtime.
set -euo pipefail
cd "$(dirname "$0")/.."

banned=(sqlx tokio axum rmcp octocrab reqwest hyper object_store)
tree=$(cargo tree -p capsid-core -e normal,build --prefix none --format '{p}' --offline 2>/dev/null \
  || cargo tree -p capsid-core -e normal,build --prefix none --format '{p}')
status=0
for crate in "${banned[@]}"; do
  if hits=$(grep -E "^${crate}(-[a-z0-9-]+)? v" <<<"$tree"); then
    echo "boundary violated: capsid-core depends on ${crate}:" >&2
    sed 's/^/  /' <<<"$hits" >&2
    cargo tree -p capsid-core -e normal,build -i "$(awk '{print $1; exit}' <<<"$hits")" >&2 || true
    status=1
  fi
done
if [ "$status" -eq 0 ]; then
  echo "boundary ok: capsid-core depends on none of: ${banned[*]}"
fi
exit "$status"
