"""Session-wide test setup for every suite (``tests/`` and ``plugins/*/tests``).

Every test runs with a temporary ``SECTORFLOW_HOME``, made for the session and removed after it, so nothing a test
runs writes outside it: the audit log is on by default and, with nothing configured, creates its embedded store and
key file under ``SECTORFLOW_HOME`` (``docs/compliance.md``). Child processes (CLI runs, servers) inherit it. Tests that
need a home of their own set it with ``monkeypatch``. The embedded log's commits use ``synchronous=NORMAL`` here (a
committed record survives a killed process, not a power cut): the suite's calls would otherwise each wait for two
fsyncs; the tests of ``FULL`` set it themselves.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

TEST_HOME_PREFIX = "sectorflow-test-home-"


@pytest.fixture(scope="session", autouse=True)
def temporary_sectorflow_home() -> Iterator[str]:
    home = tempfile.mkdtemp(prefix=TEST_HOME_PREFIX)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SECTORFLOW_HOME", home)
        mp.setenv("SECTORFLOW_AUDIT_SQLITE_SYNCHRONOUS", os.environ.get("SECTORFLOW_AUDIT_SQLITE_SYNCHRONOUS", "NORMAL"))
        yield home
    try:
        from sectorflow.compliance import runtime

        runtime.reset()  # close the embedded log before its folder goes
    except ImportError:  # pragma: no cover - a core-only install
        pass
    shutil.rmtree(home, ignore_errors=True)
