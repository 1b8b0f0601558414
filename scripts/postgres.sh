# Sourced by scripts/test.sh: starts a throwaway PostgreSQL cluster for the test run.
#
# Debian's PostgreSQL server programs live in /usr/lib/postgresql/<version>/bin. initdb refuses
# to run as root, so as root the cluster belongs to the `postgres` user. The cluster lives in a
# temporary folder, listens on a free loopback port only, and is stopped and removed on exit.
# On success CAPSID_TEST_POSTGRES_URL names its admin database.

capsid_pg_stop() {
  if [ -n "${CAPSID_PG_DIR:-}" ] && [ -d "$CAPSID_PG_DIR" ]; then
    capsid_pg_as "$CAPSID_PG_BIN/pg_ctl" -D "$CAPSID_PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$CAPSID_PG_DIR"
  fi
}

capsid_pg_as() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

capsid_pg_start() {
  CAPSID_PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$CAPSID_PG_BIN" ] || [ ! -x "$CAPSID_PG_BIN/initdb" ]; then
    echo "postgres: no server programs under /usr/lib/postgresql/*/bin" >&2
    return 1
  fi
  CAPSID_PG_DIR=$(mktemp -d /tmp/capsid-pg.XXXXXX)
  chmod 755 "$CAPSID_PG_DIR"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$CAPSID_PG_DIR"; fi
  local port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  if ! capsid_pg_as "$CAPSID_PG_BIN/initdb" -D "$CAPSID_PG_DIR/data" -U postgres -A trust -E UTF8 \
      --locale=C.UTF-8 --no-sync >"$CAPSID_PG_DIR/initdb.log" 2>&1; then
    echo "postgres: initdb failed:" >&2; cat "$CAPSID_PG_DIR/initdb.log" >&2
    return 1
  fi
  # fsync off: this cluster is thrown away after the run; durability is tested on SQLite with
  # a real crash, and the adapter itself always asks for synchronous_commit=on. Benchmarks of
  # durable writes set CAPSID_PG_DURABLE=1 to get a cluster that flushes as production does.
  local durability="-c fsync=off -c full_page_writes=off" label="fsync off"
  if [ "${CAPSID_PG_DURABLE:-0}" = 1 ]; then
    durability="-c fsync=on -c full_page_writes=on" label="fsync on"
  fi
  if ! capsid_pg_as "$CAPSID_PG_BIN/pg_ctl" -D "$CAPSID_PG_DIR/data" -l "$CAPSID_PG_DIR/server.log" -w \
      -o "-h 127.0.0.1 -p $port -k $CAPSID_PG_DIR $durability -c max_connections=400" \
      start >/dev/null; then
    echo "postgres: server did not start:" >&2; cat "$CAPSID_PG_DIR/server.log" >&2
    return 1
  fi
  export CAPSID_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres"
  echo "postgres: throwaway cluster on 127.0.0.1:$port ($CAPSID_PG_DIR, $label)"
}
