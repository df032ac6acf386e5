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
$PIP wheel --quiet --wheel-dir deploy/build/wheels '.[serve,compliance,federated]' "${plugins[@]}"
# shellcheck disable=SC2086 # RUN_FLAGS holds several flags
$PODMAN build $RUN_FLAGS --file deploy/Containerfile --tag "localhost/sectorflow-serve:$VERSION" .
# shellcheck disable=SC2086
$PODMAN build $RUN_FLAGS --file deploy/Containerfile.supernode --tag "localhost/sectorflow-supernode:$VERSION" .
