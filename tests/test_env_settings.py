"""One settings object owns every environment variable (core/src/sectorflow/env.py, issue 26): docs/configuration.md shows its
table, no other module reads a ``SECTORFLOW_`` variable itself, and ``sectorflow.home()`` is the one home folder."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import sectorflow
from core_support import REPO_ROOT
from sectorflow.env import Settings, markdown_table, raw

DOC = REPO_ROOT / "docs" / "configuration.md"
SOURCES = [path for folder in ("core", "compliance", "federated") for path in (REPO_ROOT / folder / "src").rglob("*.py")]
SOURCES += list(REPO_ROOT.glob("plugins/*/src/**/*.py"))  # the packages (tests set variables of their own)
ENV_MODULE = REPO_ROOT / "core" / "src" / "sectorflow" / "env.py"


def test_the_docs_table_is_the_code():
    text = DOC.read_text(encoding="utf-8")
    table = "\n".join(line for line in text.splitlines() if line.startswith("|"))
    assert table == markdown_table(), "docs/configuration.md: paste the output of python -m sectorflow.env"


def test_every_variable_named_in_the_code_is_a_setting():
    declared = {Settings.variable(name) for name in Settings.model_fields}
    named: dict[str, Path] = {}
    for path in SOURCES:
        for name in re.findall(r"\bSECTORFLOW_[A-Z][A-Z0-9_]*\b", path.read_text(encoding="utf-8")):
            named.setdefault(name, path)
    unknown = {name: str(path.relative_to(REPO_ROOT)) for name, path in named.items() if name not in declared}
    assert not unknown, f"declare these variables in core/src/sectorflow/env.py (Settings): {unknown}"
    assert len(declared) == 23  # SECTORFLOW_AUDIT_COMMIT (issue 30), SECTORFLOW_PROGRESS_INTERVAL (issue 28),
    # SECTORFLOW_AML_MAX_FUTURE_DAYS (issue 21: far-future timestamps refused)


def _environment_reads(path: Path | str) -> list[int]:
    """Lines of ``os.environ.get(...)``, ``os.environ[...]`` (read), ``os.getenv(...)`` in a module (or source)."""
    lines = []
    source = path if isinstance(path, str) else path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "get" and isinstance(node.func.value, ast.Attribute):
                target = node.func.value  # os.environ.get
            elif node.func.attr == "getenv":
                lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            target = node.value if isinstance(node.value, ast.Attribute) else None
        if target is not None and target.attr == "environ":
            lines.append(node.lineno)
    return lines


def test_no_other_module_reads_the_environment():
    reads = {str(path.relative_to(REPO_ROOT)): lines for path in SOURCES if path != ENV_MODULE
             if (lines := _environment_reads(path))}
    assert reads == {}, f"read environment variables through sectorflow.settings() / sectorflow.env.raw: {reads}"
    sample = 'import os\na = os.environ.get("X")\nb = os.environ["Y"]\nc = os.getenv("Z")\nos.environ["W"] = "1"\n'
    assert _environment_reads(sample) == [2, 3, 4]  # the scan finds reads (and lets a write be)


def test_home_and_settings_read_the_environment_at_each_call(monkeypatch, tmp_path):
    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path / "h"))
    monkeypatch.setenv("SECTORFLOW_NUM_THREADS", "3")
    assert sectorflow.home() == tmp_path / "h"
    assert sectorflow.settings().num_threads == "3" and raw("num_threads") == "3"
    monkeypatch.setenv("SECTORFLOW_HOME", "")
    assert sectorflow.home() == Path.home() / ".cache" / "sectorflow"  # empty is unset, as before
    given = sectorflow.settings({"SECTORFLOW_AUDIT": "off"})  # a mapping in place of os.environ: nothing else
    assert given.audit == "off" and given.num_threads is None and given.home is None
    assert sectorflow.home({"SECTORFLOW_HOME": "~/x"}) == Path.home() / "x"
    with pytest.raises(KeyError):
        raw("no_such_setting")


def test_the_e5_cache_defaults_to_the_home_folder(monkeypatch, tmp_path):
    """SECTORFLOW_CACHE_DIR was a second variable for the same folder, defaulting to ~/.cache/sectorflow even with
    SECTORFLOW_HOME set: it now defaults to the home folder."""
    encoder = pytest.importorskip("sectorflow_customer_service.e5.encoder")
    monkeypatch.delenv("SECTORFLOW_CACHE_DIR", raising=False)
    monkeypatch.setenv("SECTORFLOW_HOME", str(tmp_path))
    assert encoder.default_cache_dir() == tmp_path
    monkeypatch.setenv("SECTORFLOW_CACHE_DIR", str(tmp_path / "e5"))
    assert encoder.default_cache_dir() == tmp_path / "e5"
