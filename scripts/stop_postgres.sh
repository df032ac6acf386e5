#!/usr/bin/env bash
# Stop the test PostgreSQL server started by scripts/start_postgres.sh (same SECTORFLOW_TEST_PG_DIR). Idempotent.
set -euo pipefail
DATA="${SECTORFLOW_TEST_PG_DIR:-/tmp/sectorflow-pg}"
BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -n "$BIN" ] && [ -f "$DATA/postmaster.pid" ] || exit 0
if [ "$(id -u)" = 0 ]; then
  su postgres -s /bin/bash -c "'$BIN/pg_ctl' -D '$DATA' -m fast -w stop" >&2
else
  "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >&2
fi
