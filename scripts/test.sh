#!/usr/bin/env bash
# Run the test suite with the project's virtualenv (README.md and .ci/run both run this script).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh tests/test_taskflow.py -x`.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest -q "$@"
