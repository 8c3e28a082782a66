#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests: `tools/pg.sh start` prints its URL, `stop` ends it.
# Installs Debian's postgresql package when missing, initdb's a data directory under /tmp
# (one per checkout), and runs the server as the `postgres` system user (PostgreSQL refuses
# root) on 127.0.0.1 on a free port, trusting loopback connections only.
set -euo pipefail
cmd=${1:-start}
key=$(pwd | md5sum | cut -c1-10)
dir=${NARDY_PG_DIR:-/tmp/nardy-pg-$key}
data=$dir/data

as_postgres() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

bindir() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -z "$d" ] || [ ! -x "$d/initdb" ]; then return 1; fi
    echo "$d"
}

install() {
    if ! bindir >/dev/null; then
        echo "tools/pg.sh: installing PostgreSQL (apt-get)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq postgresql >&2
    fi
}

case $cmd in
start)
    install
    bin=$(bindir)
    if [ -f "$dir/url" ] && as_postgres "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        cat "$dir/url"
        exit 0
    fi
    mkdir -p "$dir"
    chown postgres "$dir" 2>/dev/null || true
    if [ ! -f "$data/PG_VERSION" ]; then
        as_postgres "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log"
    fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    as_postgres "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir \
            -c fsync=on -c max_connections=200 -c shared_buffers=64MB" start >/dev/null </dev/null
    echo "postgresql://postgres@127.0.0.1:$port/postgres" >"$dir/url"
    cat "$dir/url"
    ;;
stop)
    if bin=$(bindir) && [ -f "$data/PG_VERSION" ]; then
        as_postgres "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -f "$dir/url"
    ;;
url)
    cat "$dir/url"
    ;;
*)
    echo "usage: tools/pg.sh start|stop|url" >&2
    exit 2
    ;;
esac
