#!/usr/bin/env bash
# Build a wheel of every distribution here (sectorflow, sectorflow-compliance, sectorflow-federated, each plugin and
# the text-encoder library under plugins/, the echo test plugin under tests/plugins/) into dist/ (or $DIST), then
# check each one: its metadata says License-Expression: Apache-2.0 and Requires-Python: >=3.11, it carries the
# LICENSE file, and `pip install --no-deps --dry-run` accepts the set.
# Nothing is installed. Builds without isolation, with the setuptools and wheel of .venv (scripts/install.sh puts
# them there): about 30 s on 2 cores.
#
#   bash scripts/build_wheels.sh            # DIST=/tmp/wheels bash scripts/build_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
DIST="${DIST:-dist}"
rm -rf "$DIST"
mkdir -p "$DIST"
projects=(. compliance/ federated/ plugins/*/ tests/plugins/*/)
for project in "${projects[@]}"; do
  [ -f "$project/pyproject.toml" ] || continue
  # a copy of the project: setuptools writes build/ and *.egg-info into the folder it builds
  scratch=$(mktemp -d)
  tar -C "$project" --exclude=.venv --exclude=build --exclude=dist --exclude='*.egg-info' --exclude=.git \
    --exclude=__pycache__ -cf - . | tar -C "$scratch" -xf -
  "$PY" -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation -w "$DIST" "$scratch" \
    > "$DIST/.log" 2>&1 || { cat "$DIST/.log" >&2; rm -rf "$scratch"; exit 1; }
  rm -rf "$scratch"
done
rm -f "$DIST/.log"
"$PY" - "$DIST" <<'EOF'
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

problems = []
wheels = sorted(Path(sys.argv[1]).glob("*.whl"))
for wheel in wheels:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = Parser().parsestr(z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode())
    if meta.get("License-Expression") != "Apache-2.0":
        problems.append(f"{wheel.name}: License-Expression {meta.get('License-Expression')!r}")
    if meta.get("Requires-Python") != ">=3.11":
        problems.append(f"{wheel.name}: Requires-Python {meta.get('Requires-Python')!r}")
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        problems.append(f"{wheel.name}: no LICENSE file")
    print(f"build_wheels: {wheel.name} ({wheel.stat().st_size / 1e6:.1f} MB)")
if problems or len(wheels) < 9:
    sys.exit("build_wheels: " + ("; ".join(problems) or f"only {len(wheels)} wheels"))
EOF
"$PY" -m pip install --quiet --disable-pip-version-check --no-deps --dry-run --ignore-installed "$DIST"/*.whl
echo "build_wheels: $(ls "$DIST"/*.whl | wc -l) wheels in $DIST; pip install --no-deps --dry-run accepts them"
