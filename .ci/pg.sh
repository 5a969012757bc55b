#!/usr/bin/env bash
# A throwaway PostgreSQL server on 127.0.0.1 for the tests (works as root: CI runs as root).
#
#   eval "$(bash .ci/pg.sh start)"   # prints `export PGDIR=... PGPORT=... DESIGNLOOP_TEST_PG_BINDIR=...`
#   bash .ci/pg.sh stop "$PGDIR"
#   bash .ci/pg.sh install           # only installs the server binaries when they are missing
#
# initdb and postgres refuse to run as root, so the cluster is owned by, and the server runs
# as, an unprivileged user (default `postgres`, created by Debian's package; PG_RUN_AS=nobody
# works too). The server binaries are Debian's (`postgresql`), installed when missing.
set -euo pipefail

PG_RUN_AS=${PG_RUN_AS:-postgres}

find_bindir() {
  if [[ -n ${PG_BINDIR:-} ]]; then echo "$PG_BINDIR"; return; fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [[ -x $d/initdb && -x $d/pg_ctl ]] && { echo "$d"; return; }
  done
  if command -v pg_config >/dev/null && [[ -x $(pg_config --bindir)/initdb ]]; then
    pg_config --bindir; return
  fi
  return 1
}

install() {
  if find_bindir >/dev/null; then return; fi
  echo "no PostgreSQL server binaries; installing Debian's postgresql" >&2
  if [[ $(id -u) -ne 0 ]]; then echo "need root to apt-get install postgresql" >&2; exit 1; fi
  # policy-rc.d keeps the package from starting a system cluster of its own.
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  find_bindir >/dev/null
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

as_user() {
  if [[ $(id -u) -eq 0 ]]; then runuser -u "$PG_RUN_AS" -- "$@"; else "$@"; fi
}

start() {
  install
  local bindir dir port
  bindir=$(find_bindir)
  if [[ $(id -u) -eq 0 ]] && ! id -u "$PG_RUN_AS" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_RUN_AS"
  fi
  dir=$(mktemp -d /tmp/pgtmp.XXXXXX)
  port=${PGPORT_WANTED:-$(free_port)}
  [[ $(id -u) -eq 0 ]] && chown "$PG_RUN_AS" "$dir"
  # cd / so that the unprivileged user never needs to read the caller's directory.
  (cd / && as_user "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
    >"$dir/initdb.log" 2>&1) || { cat "$dir/initdb.log" >&2; exit 1; }
  (cd / && as_user "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
      start >&2) || { cat "$dir/server.log" >&2; exit 1; }
  echo "export PGDIR=$dir DESIGNLOOP_TEST_PG_BINDIR=$bindir PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres"
  echo "export DESIGNLOOP_TEST_PG=postgresql://postgres@127.0.0.1:$port/postgres"
}

stop() {
  local dir=${1:-${PGDIR:?usage: pg.sh stop PGDIR}} bindir
  bindir=$(find_bindir)
  PG_RUN_AS=$(stat -c %U "$dir")
  (cd / && as_user "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >&2) || true
  rm -rf "$dir"
}

case ${1:-start} in
  start) start ;;
  stop) shift; stop "$@" ;;
  install) install ;;
  *) echo "usage: $0 start|stop [PGDIR]|install" >&2; exit 2 ;;
esac
