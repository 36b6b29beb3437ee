#!/usr/bin/env bash
# A scratch PostgreSQL server for the tests (issue 14): Debian's postgresql package, a cluster of
# its own under $MEMWIRE_PG_DIR (default /tmp/memwire-ci-pg) listening on loopback only, a role
# and a database for the tests.
#
#   source scripts/ci/postgres.sh   # .ci/run: sets and exports MEMWIRE_TEST_POSTGRES_URL and
#                                   # MEMWIRE_REQUIRE_POSTGRES=1 (a missing server then fails)
#   bash scripts/ci/postgres.sh     # prints the URL on stdout (progress on stderr)
#
# Idempotent and quick when already done: the package is installed once, a running cluster is
# reused, the role and database are created only when missing. Run as root (it runs the server
# as the postgres user, which the package creates).

if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
    # Sourced: run the setup as a child (its `set -e` must not leak into the caller) and export.
    MEMWIRE_TEST_POSTGRES_URL="$(bash "${BASH_SOURCE[0]}")" || return 1
    export MEMWIRE_TEST_POSTGRES_URL
    export MEMWIRE_REQUIRE_POSTGRES=1
    echo "postgres: MEMWIRE_TEST_POSTGRES_URL set (tests require it)" >&2
    return 0
fi

set -euo pipefail

DIR="${MEMWIRE_PG_DIR:-/tmp/memwire-ci-pg}"
PORT="${MEMWIRE_PG_PORT:-54329}"
ROLE=memwire_test
DB=memwire_test
PASSWORD=memwire_test  # loopback only, a throwaway cluster

say() { echo "postgres: $*" >&2; }

bindir() {
    local found
    found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    [[ -n "$found" && -x "$found/initdb" ]] && echo "$found"
}

BIN="$(bindir || true)"
if [[ -z "$BIN" ]]; then
    say "installing Debian's postgresql"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    # The package's own cluster (main) is not used; ours is below.
    apt-get install -y -qq --no-install-recommends postgresql >&2
    BIN="$(bindir)"
fi
id postgres >/dev/null 2>&1 || { say "no postgres user after install"; exit 1; }

as_pg() { runuser -u postgres -- "$@"; }

mkdir -p "$DIR"
chown postgres:postgres "$DIR"
DATA="$DIR/data"
if [[ ! -f "$DATA/PG_VERSION" ]]; then
    say "initdb into $DATA"
    as_pg "$BIN/initdb" -D "$DATA" -U postgres -E UTF8 --locale=C.UTF-8 --auth-local=trust \
        --auth-host=scram-sha-256 >/dev/null
fi
if ! as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    say "starting on 127.0.0.1:$PORT"
    # fsync stays on: the durability tests mean what they say.
    as_pg "$BIN/pg_ctl" -D "$DATA" -l "$DIR/server.log" -w -t 60 start \
        -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DIR -c max_connections=200" >/dev/null
fi

psql_pg() { as_pg "$BIN/psql" -h "$DIR" -p "$PORT" -U postgres -X -q -v ON_ERROR_STOP=1 "$@"; }
if [[ "$(psql_pg -tAc "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" != "1" ]]; then
    psql_pg -c "CREATE ROLE $ROLE LOGIN PASSWORD '$PASSWORD'"
fi
if [[ "$(psql_pg -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != "1" ]]; then
    psql_pg -c "CREATE DATABASE $DB OWNER $ROLE"
fi
echo "postgresql://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DB"
