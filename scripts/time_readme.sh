#!/usr/bin/env bash
# Time README.md's first command and print each figure with its command, UTC date and machine load, as README.md
# quotes them. Usage (from the repository root, after `bash scripts/install.sh`):
#
#   bash scripts/time_readme.sh            # the run: sectorflow run aml on dev_s303, then aml cases | head
#   bash scripts/time_readme.sh --install  # also the install: a fresh clone of HEAD, bash scripts/install.sh in it
#
# Wall and CPU (user + system, the command and its children) come from /usr/bin/time; load is /proc/loadavg's
# 1-minute average before and after. The install's clone goes to a temporary folder next to this checkout (so that
# ../shared resolves the same way) and is removed afterwards; its pip cache is whatever this machine has.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
data=../shared/data/amlgentex_dev/dev_s303/transactions.csv.gz
[ -f "$data" ] || { echo "time_readme.sh: $data not found (README's first command reads it)" >&2; exit 2; }
[ -x .venv/bin/sectorflow ] || { echo "time_readme.sh: run bash scripts/install.sh first" >&2; exit 2; }

load() { cut -d' ' -f1 /proc/loadavg; }

# measure LABEL COMMAND...: run COMMAND under /usr/bin/time, print "LABEL: W s wall, C s CPU, load A -> B, date"
measure() {
  local label=$1; shift
  local out err start before after
  out=$(mktemp)
  err=$(mktemp)
  start=$(date -u +"%Y-%m-%d %H:%M:%S UTC")
  before=$(load)
  if ! /usr/bin/time -f "%e %U %S" -o "$out" "$@" > /dev/null 2> "$err"; then
    echo "time_readme.sh: $label failed:" >&2
    tail -20 "$err" >&2
    exit 1
  fi
  after=$(load)
  read -r wall user sys < "$out"
  rm -f "$out" "$err"
  printf '%s: %s s wall, %.1f s CPU (user %s + system %s), load average %s -> %s, %s, %s cores\n' \
    "$label" "$wall" "$(awk "BEGIN { print $user + $sys }")" "$user" "$sys" "$before" "$after" "$start" "$(nproc)"
}

clone=""
results=$(mktemp --suffix=.jsonl)
cleanup() { rm -f "$results"; [ -z "$clone" ] || rm -rf "$clone"; }
trap cleanup EXIT

if [ "${1:-}" = "--install" ]; then
  clone=$(mktemp -d "$repo/../.time-readme-XXXXXX")
  git clone -q "$repo" "$clone/sectorflow"
  measure "install (bash scripts/install.sh in a fresh clone of $(git rev-parse --short HEAD))" \
    bash -c "cd '$clone/sectorflow' && bash scripts/install.sh > '$clone/install.log' 2>&1"
fi

echo "tree $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
measure "run (.venv/bin/sectorflow run aml $data --format amlgentex --on-error skip --output ...)" \
  .venv/bin/sectorflow run aml "$data" --format amlgentex --on-error skip --output "$results" --no-progress
measure "cases (.venv/bin/sectorflow aml cases --results ... | head)" \
  bash -c ".venv/bin/sectorflow aml cases --results '$results' | head"
