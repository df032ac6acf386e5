#!/usr/bin/env bash
# Run the test suite with the project's virtualenv (README.md and .ci/run both run this script).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh tests/test_taskflow.py -x`.
#
# Two pytest-xdist workers (`-n 2 --dist loadfile`): each test module runs whole on one worker, the Flower/Ray
# simulation modules one after another on one worker and first (conftest.py says how; docs/install.md, "Running the
# tests"). Extra arguments come after these, so `-n 4` or `-n 0` (no workers) replaces the count; `-p no:xdist` runs
# without pytest-xdist at all.
set -euo pipefail
cd "$(dirname "$0")/.."
parallel=(-n 2 --dist loadfile)
for arg in "$@"; do
  case "$arg" in
    no:xdist | -pno:xdist) parallel=() ;;
  esac
done
exec .venv/bin/python -m pytest -q "${parallel[@]}" "$@"
