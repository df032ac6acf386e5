"""An account-MLP bundle's weights file has the same bytes for the same weights in every process (fresh-user report,
3 Dec 2026: two identical ``aml train --model mlp`` runs, and two reproducible federated runs, gave different
``account_mlp.safetensors`` bytes and so different ``bundle_sha256``: safetensors writes header metadata from a
hash map whose order changes per process)."""

from __future__ import annotations

import hashlib
import subprocess
import sys

SAVE = """
import sys
import numpy as np
from pathlib import Path
from sectorflow_aml.account_mlp import save_weights
rng = np.random.default_rng(7)
save_weights({"l0.weight": rng.standard_normal((4, 3)).astype(np.float32), "l0.bias": np.zeros(4, np.float32),
              "input.mean": np.ones(3, np.float32)}, Path(sys.argv[1]))
"""


def test_the_same_weights_give_the_same_file_bytes_in_every_process(tmp_path):
    digests = set()
    for i in range(6):  # with two metadata entries, six processes agree by chance once in 32
        path = tmp_path / f"w{i}.safetensors"
        subprocess.run([sys.executable, "-c", SAVE, str(path)], check=True, timeout=120)
        digests.add(hashlib.sha256(path.read_bytes()).hexdigest())
    assert len(digests) == 1
    from safetensors import safe_open

    with safe_open(str(tmp_path / "w0.safetensors"), "np") as handle:
        assert handle.metadata() == {"format": "account-mlp"}
