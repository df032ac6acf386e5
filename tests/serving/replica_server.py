"""One server process of the replica tests: the serving tests' tasks (``conftest.TestTasks``) behind a real uvicorn,
with the installed plugins named in ``SECTORFLOW_LOAD_PLUGINS`` (default ``builtin_observers`` only).

    python tests/serving/replica_server.py CONFIG.json PORT
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for ``serving.conftest``
os.environ.setdefault("SECTORFLOW_LOAD_PLUGINS", "builtin_observers")  # a test may add ``aml`` and ``audit``

from sectorflow import plugins  # noqa: E402
from sectorflow.serving import create_app, run_server  # noqa: E402
from serving.conftest import TestTasks  # noqa: E402

if __name__ == "__main__":
    plugins.reset()
    plugins.get_plugin_manager().register(TestTasks(Path("/nonexistent-score-bundle")), name="serving_tests")
    run_server(create_app(sys.argv[1]), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning",
               access_log=False)
