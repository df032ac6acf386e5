"""The `sectorflow` package is made of portions in three distributions (docs/architecture.md, "Distributions and
folders"): the core (core/src/sectorflow), sectorflow-compliance and sectorflow-federated. The import names are the
same whether the portions are installed editable (each src/ folder on sys.path, joined by the core's
``pkgutil.extend_path``) or from wheels (one site-packages/sectorflow folder).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

import sectorflow
import sectorflow.compliance
import sectorflow.federated
from core_support import PYTHON, REPO_ROOT, child_env

PORTIONS = {"sectorflow": REPO_ROOT / "core" / "src" / "sectorflow",
            "sectorflow.compliance": REPO_ROOT / "compliance" / "src" / "sectorflow" / "compliance",
            "sectorflow.federated": REPO_ROOT / "federated" / "src" / "sectorflow" / "federated"}

PROBE = textwrap.dedent("""
    import json
    import sectorflow, sectorflow.compliance.log, sectorflow.federated.plugin, sectorflow.serving.app
    from sectorflow import Taskflow, host
    print(json.dumps({"path": list(sectorflow.__path__), "compliance": sectorflow.compliance.log.__file__,
                      "federated": sectorflow.federated.plugin.__file__, "taskflow": Taskflow.__module__,
                      "builtin": sorted(host.BUILTIN_PLUGINS)}))
""")


def test_the_editable_install_imports_each_portion_from_its_own_folder():
    if not Path(sectorflow.__file__).resolve().is_relative_to(REPO_ROOT):
        pytest.skip("sectorflow is not installed editable from this checkout")
    for module, folder in PORTIONS.items():
        assert Path(sys.modules[module].__file__).resolve() == folder / "__init__.py"
    assert [Path(p).resolve() for p in sectorflow.__path__][:1] == [PORTIONS["sectorflow"]]
    assert {PORTIONS["sectorflow.compliance"].parent, PORTIONS["sectorflow.federated"].parent} <= {
        Path(p).resolve() for p in sectorflow.__path__}


def test_wheels_of_the_three_distributions_install_as_one_package(tmp_path):
    """Built without isolation (as scripts/build_wheels.sh does), installed without dependencies into a fresh
    virtualenv; the dependencies come from this one's site-packages on PYTHONPATH (no .pth file there runs, so
    none of the editable installs is seen)."""
    wheels = tmp_path / "wheels"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for project in (REPO_ROOT, REPO_ROOT / "compliance", REPO_ROOT / "federated"):
        scratch = tmp_path / "src" / project.name  # a copy: setuptools writes build/ and *.egg-info where it builds
        scratch.mkdir(parents=True)
        for name in ("pyproject.toml", "LICENSE", "README.md"):
            if (project / name).exists():
                shutil.copy(project / name, scratch / name)
        source = "core/src" if project == REPO_ROOT else "src"
        shutil.copytree(project / source, scratch / source, ignore=skip)
        done = subprocess.run([PYTHON, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                               "--no-build-isolation", "-w", str(wheels), str(scratch)],
                              capture_output=True, text=True, timeout=300, env=child_env(PIP_NO_INPUT="1"))
        assert done.returncode == 0, done.stderr[-2000:]
    assert len(list(wheels.glob("*.whl"))) == 3
    venv = tmp_path / "venv"
    subprocess.run([PYTHON, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", "--no-deps", "--no-index", *map(str, sorted(wheels.glob("*.whl")))],
                          capture_output=True, text=True, timeout=300, env=child_env(PIP_NO_INPUT="1"))
    assert done.returncode == 0, done.stderr[-2000:]
    site = sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"]
    deps = sysconfig.get_paths()["purelib"]
    done = subprocess.run([str(venv / "bin" / "python"), "-c", PROBE], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=child_env(PYTHONPATH=deps, SECTORFLOW_LOAD_PLUGINS=None))
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    package = Path(site) / "sectorflow"
    assert [Path(p) for p in found["path"]] == [package]  # one folder: nothing to extend
    assert Path(found["compliance"]) == package / "compliance" / "log.py"
    assert Path(found["federated"]) == package / "federated" / "plugin.py"
    assert found["taskflow"] == "sectorflow.taskflow" and found["builtin"] == ["builtin_observers", "serve"]
