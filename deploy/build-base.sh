#!/usr/bin/env bash
# Build the base image of sectorflow's containers from Debian packages, without pulling any registry image:
# debootstrap a minimal Debian 12 (bookworm) root file system with Python 3.11, then `podman import` it.
#
#   sudo bash deploy/build-base.sh                     # -> localhost/sectorflow-base:bookworm
#   MIRROR=http://deb.debian.org/debian TAG=localhost/sectorflow-base:bookworm sudo -E bash deploy/build-base.sh
#
# Needs root, debootstrap and podman (apt-get install -y debootstrap podman). Python 3.11 is bookworm's python3,
# the version the project's wheels are built and tested with. PODMAN and RUN_FLAGS adapt podman to the host, e.g.
# on the project's build VM (cgroups v1+v2 hybrid, no raising of rlimits; docs/deployment.md):
#   PODMAN="podman --runtime runc" RUN_FLAGS="--ulimit nofile=20000:20000 --ulimit nproc=4096:4096"
set -euo pipefail
PODMAN="${PODMAN:-podman}"
RUN_FLAGS="${RUN_FLAGS:-}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
SUITE="${SUITE:-bookworm}"
TAG="${TAG:-localhost/sectorflow-base:bookworm}"
# python3-venv: the image's virtualenv; libgomp1: PaddlePaddle's OpenMP runtime; ca-certificates: TLS to a
# SuperLink or PostgreSQL; tzdata: audit timestamps in local time when asked.
PACKAGES="python3,python3-venv,libgomp1,ca-certificates,tzdata"
root="$(mktemp -d /tmp/sectorflow-base.XXXXXX)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$MIRROR"
# Keep the image small and reproducible: no apt lists, caches, docs or man pages.
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/usr/share/doc/* "$root"/usr/share/man/* \
  "$root"/usr/share/locale/* "$root"/var/log/*
tar --numeric-owner -C "$root" -c . | $PODMAN import \
  --change 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' - "$TAG"
# shellcheck disable=SC2086 # RUN_FLAGS holds several flags
$PODMAN run --rm $RUN_FLAGS "$TAG" python3 -c 'import sys, venv; print("base ok: Python", sys.version.split()[0])'
