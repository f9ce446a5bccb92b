#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests, Debian's package, on loopback only:
#   bash .ci/postgres.sh start DIR   initdb into DIR, start, print the admin URL (password in it)
#   bash .ci/postgres.sh stop DIR    stop it and remove DIR
# The server runs as the invoking user, or as `postgres` when that is root (PostgreSQL refuses
# root). Password authentication (scram-sha-256) only, so the tests meet what a team's server
# asks of the farm. Several at once are fine: each picks a free port.
set -euo pipefail
action=${1:?start|stop}
dir=${2:?a directory for the server}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "postgres.sh: no PostgreSQL server here (apt-get install postgresql)" >&2
  exit 1
fi
as=()
if [ "$(id -u)" = 0 ]; then as=(runuser -u postgres --); fi

case "$action" in
start)
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  printf '%s\n' "$password" > "$dir.pw"
  [ "$(id -u)" = 0 ] && chown postgres "$dir.pw"
  "${as[@]}" "$bin/initdb" -D "$dir/data" -U farm_admin --pwfile="$dir.pw" \
    --auth=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir.log" 2>&1
  rm -f "$dir.pw"
  "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/data/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir/data -c fsync=off -c max_connections=200" \
    start >>"$dir.log" 2>&1 || { cat "$dir.log" "$dir/data/server.log" >&2; exit 1; }
  echo "postgresql://farm_admin:$password@127.0.0.1:$port/postgres"
  ;;
stop)
  if [ -d "$dir/data" ]; then
    "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir" "$dir.log"
  ;;
*)
  echo "postgres.sh: start or stop, not $action" >&2
  exit 2
  ;;
esac
