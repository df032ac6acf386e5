#!/usr/bin/env bash
# Resolve the whole dependency set (sectorflow[test,all], compliance/, federated/ and every plugin under plugins/) for CPython 3.11, 3.12
# and 3.13 on manylinux x86_64, wheels only: a pin without a wheel for one of them (paddle2onnx 2.1.0 on 3.13,
# hnswlib everywhere) or two pins that exclude each other fail here, before anyone's install does. Resolution
# only (uv pip compile: no download of packages, no build, no install); the three run side by side, about 10-30 s.
#
#   bash scripts/resolve_check.sh                 # PYTHONS="3.12" bash scripts/resolve_check.sh for one version
#
# uv is PyPI's `uv` (flwr already installs it into .venv); the resolved lists are left in $OUT (default a temporary
# folder) as requirements-<version>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
UV="${UV:-.venv/bin/uv}"
if [ ! -x "$UV" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check uv
fi
PYTHONS="${PYTHONS:-3.11 3.12 3.13}"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
requirements="$OUT/requirements.in"
{
  echo "-e $root[test,all]"
  echo "-e $root/compliance"  # the distributions the compliance and federated extras require
  echo "-e $root/federated"
  for p in plugins/*/pyproject.toml; do echo "-e $root/$(dirname "$p")"; done
} > "$requirements"
pids=()
for version in $PYTHONS; do
  "$UV" pip compile "$requirements" --python-version "$version" --python-platform x86_64-manylinux_2_28 \
    --only-binary :all: --quiet --no-header -o "$OUT/requirements-$version.txt" > "$OUT/log-$version.txt" 2>&1 &
  pids+=("$!:$version")
done
status=0
for entry in "${pids[@]}"; do
  pid=${entry%%:*}; version=${entry#*:}
  if wait "$pid"; then
    pins=$(grep -cE '^[A-Za-z0-9_.-]+==' "$OUT/requirements-$version.txt" || true)
    echo "resolve_check: Python $version resolves ($pins packages; $(grep -E '^(numpy|paddlepaddle)==' \
      "$OUT/requirements-$version.txt" | tr '\n' ' '))"
  else
    echo "resolve_check: Python $version does NOT resolve:" >&2
    cat "$OUT/log-$version.txt" >&2
    status=1
  fi
done
exit "$status"
