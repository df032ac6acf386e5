"""No test module may change the process environment at import time: pytest imports every module before it runs
any test, so one module's ``os.environ[...] = ...`` silently changes how every other suite runs (a module that
switched the audit log off made the serving and federated audit tests read an empty log). Use ``monkeypatch``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module_level_env_writes(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = []
    for node in tree.body:  # top-level statements only: fixtures and tests may use monkeypatch freely
        for sub in ast.walk(node) if isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign)) else ():
            if isinstance(sub, ast.Attribute) and sub.attr == "environ":
                parent_calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)
                                and isinstance(n.func, ast.Attribute) and n.func.attr in ("setdefault", "update", "pop")]
                targets = [t for t in getattr(node, "targets", []) if isinstance(t, ast.Subscript)]
                if parent_calls or targets:
                    lines.append(node.lineno)
                break
    return lines


def test_no_test_module_writes_the_environment_at_import():
    offenders = []
    for folder in (ROOT / "tests", ROOT / "compliance" / "tests", ROOT / "federated" / "tests", ROOT / "plugins"):
        for path in folder.rglob("test_*.py"):
            if ".venv" in path.parts:
                continue
            offenders += [f"{path.relative_to(ROOT)}:{line}" for line in _module_level_env_writes(path)]
    assert offenders == []


def test_every_test_runs_with_a_temporary_sectorflow_home():
    """The root conftest.py gives the session a temporary SECTORFLOW_HOME, so the audit log (on by default) and the
    INT8 and inference caches write nothing under the user's home."""
    import os
    import tempfile

    home = Path(os.environ["SECTORFLOW_HOME"])
    assert home.is_relative_to(tempfile.gettempdir()) and home.name.startswith("sectorflow-test-home-")
    from sectorflow.compliance import load_config

    cfg = load_config({k: v for k, v in os.environ.items() if not k.startswith("SECTORFLOW_AUDIT")})
    assert cfg.embedded and Path(cfg.db).is_relative_to(home) and Path(cfg.key_file).is_relative_to(home)
