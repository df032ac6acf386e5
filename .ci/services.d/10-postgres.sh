# PostgreSQL for the audit-log tests (compliance/tests), from scripts/start_postgres.sh (installs it if missing).
# Sourced by .ci/run: exports SECTORFLOW_TEST_POSTGRES_DSN and, if this run started the server, stops it at exit.
_pg_data="${SECTORFLOW_TEST_PG_DIR:-/tmp/sectorflow-pg}"
_pg_as() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$1"; else bash -c "$1"; fi; }
_pg_was_running=no
if _pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)" && [ -n "$_pg_bin" ] \
   && _pg_as "'$_pg_bin/pg_ctl' -D '$_pg_data' status" >/dev/null 2>&1; then
  _pg_was_running=yes
fi
SECTORFLOW_TEST_POSTGRES_DSN="$(bash scripts/start_postgres.sh)"
export SECTORFLOW_TEST_POSTGRES_DSN
echo "PostgreSQL at $SECTORFLOW_TEST_POSTGRES_DSN (already running: $_pg_was_running)"
if [ "$_pg_was_running" = no ]; then
  _pg_bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
  STOP+=("_pg_as \"'$_pg_bin/pg_ctl' -D '$_pg_data' -m fast stop\" >/dev/null")
fi
