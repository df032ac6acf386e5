#!/usr/bin/env bash
# Install (if missing) and start a throwaway PostgreSQL server for the audit-log tests, then print its DSN.
#
#   export SECTORFLOW_TEST_POSTGRES_DSN="$(bash scripts/start_postgres.sh)"
#
# Data folder: $SECTORFLOW_TEST_PG_DIR (default /tmp/sectorflow-pg); port: $SECTORFLOW_TEST_PG_PORT (default 54329),
# listening on 127.0.0.1 only, trust authentication (test use only). Idempotent: a running server is reused.
# Stop it with: pg_ctl -D /tmp/sectorflow-pg stop (as the postgres user when run as root).
set -euo pipefail
DATA="${SECTORFLOW_TEST_PG_DIR:-/tmp/sectorflow-pg}"
PORT="${SECTORFLOW_TEST_PG_PORT:-54329}"
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then echo "PostgreSQL is not installed and this is not root: apt-get install postgresql" >&2; exit 1; fi
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
fi
BIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$1"; else bash -c "$1"; fi; }
mkdir -p "$DATA"
if [ "$(id -u)" = 0 ]; then chown postgres "$DATA"; chmod 700 "$DATA"; fi
if [ ! -f "$DATA/PG_VERSION" ]; then
  as_pg "'$BIN/initdb' -D '$DATA' -A trust -U postgres --no-sync" >&2
fi
if ! as_pg "'$BIN/pg_ctl' -D '$DATA' status" >/dev/null 2>&1; then
  as_pg "'$BIN/pg_ctl' -D '$DATA' -w -t 60 -l '$DATA/server.log' \
    -o '-p $PORT -k $DATA -c listen_addresses=127.0.0.1 -c fsync=on' start" >&2
fi
as_pg "'$BIN/psql' -h 127.0.0.1 -p $PORT -U postgres -tAc \"SELECT 1 FROM pg_database WHERE datname='sectorflow_test'\" | grep -q 1 \
  || '$BIN/createdb' -h 127.0.0.1 -p $PORT -U postgres sectorflow_test" >&2
echo "postgresql://postgres@127.0.0.1:${PORT}/sectorflow_test"
