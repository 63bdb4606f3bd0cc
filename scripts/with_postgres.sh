#!/usr/bin/env bash
# Run a command with a throwaway PostgreSQL server: `scripts/with_postgres.sh pytest -m postgres`.
#
# It makes a new cluster (initdb) in a temporary folder, starts it on a free port of
# 127.0.0.1 (and a Unix socket in that folder), exports MINIAGENT_PG_DSN for the command,
# and always stops the server and deletes the folder afterwards, whether the command
# passed, failed or was interrupted (trap). PostgreSQL refuses to run as root, so as
# root the server runs as the `postgres` user (the Debian package creates it).
# The cluster is for tests: no fsync, nothing survives it.
set -euo pipefail

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    echo "with_postgres: no PostgreSQL server found in /usr/lib/postgresql/*/bin (apt-get install postgresql)" >&2
    exit 2
fi

dir=$(mktemp -d /tmp/miniagent-pg.XXXXXX)
as_server=()
if [ "$(id -u)" = 0 ]; then
    chown postgres: "$dir"
    as_server=(runuser -u postgres --)
fi

stop() {
    "${as_server[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap stop EXIT INT TERM

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as_server[@]}" "$bindir/initdb" -D "$dir/data" -U miniagent -A trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 2; }
"${as_server[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start -o \
    "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=100" \
    >/dev/null || { cat "$dir/server.log" >&2; exit 2; }

export MINIAGENT_PG_DSN="host=127.0.0.1 port=$port user=miniagent dbname=postgres"
echo "with_postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on port $port (in $dir)"
"$@"
