#!/usr/bin/env bash
# A throwaway PostgreSQL server on 127.0.0.1 for the store tests.
#
#   eval "$(.ci/postgres.sh start)"   # prints export lines for the DSN and the data dir
#   .ci/postgres.sh stop              # stops the server and removes its data dir
#
# `start` installs Debian's `postgresql` package when no initdb is found,
# creates a cluster in a fresh temp dir (owned by the `postgres` user when run
# as root: the server refuses to run as root), starts it on a free port with
# its socket under that dir, and creates the database `solvi_test`.
# Messages go to stderr; stdout holds only the export lines.
set -euo pipefail

STATE="${TMPDIR:-/tmp}/solvi-postgres.dir"

say() { echo "postgres.sh: $*" >&2; }

find_bin() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

as_owner() {
    # Run a command as the cluster's owner.
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

start() {
    local bin
    bin="$(find_bin)"
    if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
        say "no PostgreSQL found; installing Debian's postgresql package"
        local sudo=""
        [ "$(id -u)" = 0 ] || sudo="sudo"
        $sudo apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
            postgresql >&2
        bin="$(find_bin)"
    fi
    if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
        say "initdb is still missing after installing postgresql; install it by hand"
        exit 1
    fi

    local dir port
    dir="$(mktemp -d "${TMPDIR:-/tmp}/solvi-pg.XXXXXX")"
    mkdir -p "$dir/data" "$dir/sock"
    if [ "$(id -u)" = 0 ]; then
        if ! id postgres >/dev/null 2>&1; then
            say "running as root but there is no postgres user; install the postgresql package"
            exit 1
        fi
        chown -R postgres: "$dir"
    fi
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"

    as_owner "$bin/initdb" -D "$dir/data" -U solvi --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        exit 1
    }
    # fsync off: a test cluster that is thrown away needs no durability.
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir/sock -c fsync=off -c max_connections=200" \
        start >&2 || {
        cat "$dir/server.log" >&2
        exit 1
    }
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U solvi solvi_test
    echo "$dir" >"$STATE"
    say "server on 127.0.0.1:$port, data in $dir"
    echo "export SOLVI_TEST_POSTGRES_DSN=postgresql://solvi@127.0.0.1:$port/solvi_test"
    echo "export SOLVI_TEST_POSTGRES_DIR=$dir"
}

stop() {
    local dir="${1:-${SOLVI_TEST_POSTGRES_DIR:-}}"
    if [ -z "$dir" ] && [ -f "$STATE" ]; then
        dir="$(cat "$STATE")"
    fi
    if [ -z "$dir" ] || [ ! -d "$dir/data" ]; then
        say "no server to stop (no data dir given, none recorded in $STATE)"
        return 0
    fi
    local bin
    bin="$(find_bin)"
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || say "server in $dir was not running"
    rm -rf "$dir"
    rm -f "$STATE"
    say "stopped and removed $dir"
}

case "${1:-}" in
start) start ;;
stop) stop "${2:-}" ;;
*)
    echo "usage: $0 start|stop [DATA_DIR]" >&2
    exit 2
    ;;
esac
