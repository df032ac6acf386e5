"""The extras are optional: without the libraries that only an extra installs (serve, federated, compliance, int8),
every installed plugin, the built-in ones included, still loads, so `Taskflow` and `sectorflow tasks` work.

The check runs in a fresh process in which importing those libraries fails, as on a machine where
`pip install sectorflow` was run without extras.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import textwrap
import tomllib

from core_support import PYTHON, REPO_ROOT, child_env

from sectorflow import plugins

EXTRAS = ("serve", "federated", "compliance", "int8")


def _dist_name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _closure(names: set[str]) -> set[str]:
    """``names`` and every installed distribution they require, transitively (markers ignored: a superset)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo.extend(_dist_name(r) for r in requires if "extra ==" not in r)
    return seen


def extra_only_modules() -> list[str]:
    """Top-level import names of the distributions that only an extra brings in (installed here or not).

    A distribution the base install pulls in as well (httpx: Paddle itself requires it) is not extra-only. The
    `compliance` and `federated` extras require the distributions in compliance/ and federated/ (portions of the
    `sectorflow` package); their own requirements count as the extra's.
    """
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    base = _closure({_dist_name(r) for r in project["dependencies"]})
    extra = {_dist_name(r) for name in EXTRAS for r in project["optional-dependencies"].get(name, [])}
    for layer in sorted(d for d in extra if d.startswith("sectorflow-")):
        extra |= {_dist_name(r) for r in tomllib.loads((REPO_ROOT / layer.removeprefix("sectorflow-") /
                                                         "pyproject.toml").read_text())["project"]["dependencies"]}
    extra -= base | {"sectorflow", "sectorflow-compliance", "sectorflow-federated"}
    modules = {name.replace("-", "_") for name in extra}
    for module, dists in importlib.metadata.packages_distributions().items():
        if any(d.lower().replace("_", "-") in extra for d in dists):
            modules.add(module)
    return sorted(m for m in modules if m.isidentifier())


PROBE = textwrap.dedent("""
    import importlib.abc, json, sys

    BLOCKED = set(json.loads(sys.argv[1]))

    class NotInstalled(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked: extra not installed)", name=name)
            return None

    sys.meta_path.insert(0, NotInstalled())
    from sectorflow import Taskflow, plugins
    from sectorflow.cli import main

    loaded = sorted(name for name, _ in plugins.get_plugin_manager().list_name_plugin())
    tasks = [row["task"] for row in Taskflow.tasks()]
    code = main(["tasks", "--json"])
    print(json.dumps({"loaded": loaded, "tasks": tasks, "cli": code}))
""")


def test_core_and_builtin_plugins_load_without_any_extra(tmp_path):
    blocked = extra_only_modules()
    assert {"fastapi", "uvicorn", "flwr"} <= set(blocked)
    done = subprocess.run([PYTHON, "-c", PROBE, json.dumps(blocked)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=child_env(SECTORFLOW_LOAD_PLUGINS=None, PYTHONPATH=None))
    assert done.returncode == 0, (
        "with only the base dependencies installed, loading the plugins failed; a built-in plugin must import "
        f"its extra's libraries lazily (blocked: {blocked}):\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.splitlines()[-1])
    installed = {*plugins.BUILTIN_PLUGINS, *(ep.name for ep in importlib.metadata.entry_points(group="sectorflow"))}
    assert result["loaded"] == sorted(installed)
    assert result["cli"] == 0
