#!/usr/bin/env bash
# Build sectorflow's images with podman, offline once the wheels are here:
#   1. the base from Debian packages (deploy/build-base.sh) unless it exists;
#   2. wheels of sectorflow, its serve/compliance/federated extras' dependencies and every plugin under plugins/
#      (with their shipped model bundles) into deploy/build/wheels (pip, from the package index);
#   3. deploy/Containerfile (the server) and deploy/Containerfile.supernode (a Flower SuperNode).
#
#   sudo bash deploy/build-images.sh            # tags localhost/sectorflow-serve:0.1.0, localhost/sectorflow-supernode:0.1.0
#   PODMAN="podman --runtime runc" RUN_FLAGS="--ulimit nofile=20000:20000 --ulimit nproc=4096:4096" \
#     bash deploy/build-images.sh               # as run on the project's build VM (docs/deployment.md)
set -euo pipefail
PODMAN="${PODMAN:-podman}"
RUN_FLAGS="${RUN_FLAGS:-}"
export PODMAN RUN_FLAGS
cd "$(dirname "$0")/.."
BASE="${BASE:-localhost/sectorflow-base:bookworm}"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)"
PIP="${PIP:-.venv/bin/python -m pip}"
$PODMAN image exists "$BASE" || bash deploy/build-base.sh
mkdir -p deploy/build/wheels
plugins=()
for p in plugins/*/pyproject.toml; do plugins+=("$(dirname "$p")"); done
# compliance/ and federated/: the distributions the compliance and federated extras require (not on an index)
$PIP wheel --quiet --wheel-dir deploy/build/wheels '.[serve,compliance,federated]' ./compliance ./federated \
  "${plugins[@]}"
# The wheels above follow this machine's Python; the image's may differ in markers (Debian 12's 3.11.2 needs
# async-timeout for redis, 3.11.7 does not). Resolve once more for the image's interpreter and glibc, from the wheels
# built above plus the index, and fetch what is missing.
image_py="$($PODMAN run --rm $RUN_FLAGS "$BASE" python3 -c 'import platform; print(platform.python_version())')"
glibc="$($PODMAN run --rm $RUN_FLAGS "$BASE" python3 -c 'import os; print(os.confstr("CS_GNU_LIBC_VERSION").split()[1].replace(".", "_"))')"
# every manylinux tag the image's glibc runs (pip does not widen a --platform by itself), and linux_x86_64 for the
# wheels built here from sdists (hnswlib): this machine is Debian 12 too
platforms=(--platform linux_x86_64 --platform manylinux1_x86_64 --platform manylinux2010_x86_64 --platform manylinux2014_x86_64)
for ((minor = 5; minor <= ${glibc#2_}; minor++)); do platforms+=(--platform "manylinux_2_${minor}_x86_64"); done
names=()
for p in "${plugins[@]}"; do names+=("$(sed -n 's/^name = "\(.*\)"/\1/p' "$p/pyproject.toml" | head -1)==$VERSION"); done
$PIP download --quiet --dest deploy/build/wheels --find-links deploy/build/wheels --only-binary=:all: \
  --python-version "$image_py" --implementation cp --abi "cp$(echo "$image_py" | cut -d. -f1,2 | tr -d .)" \
  "${platforms[@]}" \
  "sectorflow[serve,compliance,federated]==$VERSION" "sectorflow-compliance==$VERSION" \
  "sectorflow-federated==$VERSION" "${names[@]}" \
  "async-timeout>=4.0.3"  # pip evaluates python_full_version markers with this machine's Python: redis's on 3.11.2
# shellcheck disable=SC2086 # RUN_FLAGS holds several flags
$PODMAN build $RUN_FLAGS --file deploy/Containerfile --tag "localhost/sectorflow-serve:$VERSION" .
# shellcheck disable=SC2086
$PODMAN build $RUN_FLAGS --file deploy/Containerfile.supernode --tag "localhost/sectorflow-supernode:$VERSION" .
