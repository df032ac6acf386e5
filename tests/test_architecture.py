"""Dependencies point one way (docs/architecture.md): core imports no plugin and nothing outside core; plugins and the
layers above the core (serving, compliance, federated) import only sectorflow's public API (``sectorflow.__all__``,
``sectorflow.host`` and the public subpackages); no plugin imports another. Checked on the source (AST), so lazy
imports count too."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

import sectorflow
from core_support import REPO_ROOT

CORE = REPO_ROOT / "core" / "src" / "sectorflow"
CORE_THIRD_PARTY = {"numpy", "pydantic", "pydantic_settings", "pluggy", "typer", "rich", "paddle", "charset_normalizer"}
# The HTTP server may also use its web stack (starlette is FastAPI's own base and is re-exported by it).
SERVING_THIRD_PARTY = CORE_THIRD_PARTY | {"fastapi", "fastapi_offline", "starlette", "uvicorn", "prometheus_client",
                                          "limits", "httpx",
                                          "grpc", "google"}  # grpcio, protobuf (google.protobuf): the gRPC service
# INT8 and export (sectorflow.models.export, .quantize, .weight_only, .onnx_compact; sectorflow.onnx_runtime) use the
# ONNX stack, imported only when they run.
ONNX_MODULES = {"sectorflow.models.export", "sectorflow.models.quantize", "sectorflow.onnx_runtime",
                "sectorflow.models.weight_only", "sectorflow.models.onnx_compact"}
ONNX_THIRD_PARTY = CORE_THIRD_PARTY | {"onnx", "onnxruntime", "paddle2onnx"}
# The PostgreSQL state store (sectorflow.state_store_pg) and its lock (.state_lock_pg) use psycopg (the compliance
# extra), imported only for a postgresql:// store.
POSTGRES_MODULES = {"sectorflow.state_store_pg", "sectorflow.state_lock_pg"}
POSTGRES_THIRD_PARTY = CORE_THIRD_PARTY | {"psycopg"}
# sectorflow modules and subpackages that are public API for plugins and layers: the host API (core/.../host.py) and the
# layers, each documented (docs/architecture.md).
PUBLIC_SUBPACKAGES = {"host", "federated", "compliance", "serving"}
# Portions of the `sectorflow` package in distributions of their own (compliance/, federated/): core must not import
# them.
OUTSIDE_CORE = {"federated", "compliance"}
# The layers above the core, each with its package folder: they import the core only through the public API.
LAYERS = {"serving": CORE / "serving",
          "compliance": REPO_ROOT / "compliance" / "src" / "sectorflow" / "compliance",
          "federated": REPO_ROOT / "federated" / "src" / "sectorflow" / "federated"}
PLUGIN_ROOTS = sorted([*REPO_ROOT.glob("plugins/*/src"), *REPO_ROOT.glob("tests/plugins/*/src")])


def module_name(path: Path, root: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def imports(path: Path, module: str) -> Iterator[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) for every import in a file, relative ones resolved."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target, [alias.name for alias in node.names]


def core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def test_core_imports_only_stdlib_its_own_modules_and_its_declared_dependencies():
    problems = []
    for path in core_files():
        module = module_name(path, CORE, "sectorflow")
        allowed = (SERVING_THIRD_PARTY if module.startswith("sectorflow.serving")
                   else ONNX_THIRD_PARTY if module in ONNX_MODULES
                   else POSTGRES_THIRD_PARTY if module in POSTGRES_MODULES else CORE_THIRD_PARTY)
        for line, target, names in imports(path, module):
            top = target.split(".")[0]
            where = f"{path.relative_to(REPO_ROOT)}:{line} imports {target}"
            if top == "sectorflow":
                sub = target.split(".")[1] if "." in target else None
                if sub in OUTSIDE_CORE or (sub is None and OUTSIDE_CORE & set(names)):
                    problems.append(f"{where} {sorted(OUTSIDE_CORE & {sub, *names})} (outside core: emit a "
                                    f"TaskEvent or add a hook instead)")
            elif top not in sys.stdlib_module_names and top not in allowed:
                problems.append(f"{where} (not stdlib, not in {sorted(allowed)})")
    assert not problems, "\n".join(problems)
    assert len(core_files()) >= 12  # the scan really saw the core


def plugin_packages(roots: list[Path]) -> dict[str, Path]:
    """Top-level import package -> its plugin's src folder."""
    found = {}
    for root in roots:
        for init in root.glob("*/__init__.py"):
            found[init.parent.name] = root
    return found


def shown(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def library_packages(roots: list[Path]) -> set[str]:
    """Packages of the library distributions among ``roots``: a pyproject beside ``src/`` that registers no
    ``sectorflow`` entry point (plugins/text_encoder). Plugins may import them, as any library they depend on."""
    found = set()
    for root in roots:
        pyproject = root.parent / "pyproject.toml"
        if pyproject.exists() and "sectorflow" not in tomllib.loads(pyproject.read_text())["project"].get(
                "entry-points", {}):
            found |= {init.parent.name for init in root.glob("*/__init__.py")}
    return found


def plugin_violations(roots: list[Path]) -> list[str]:
    packages = plugin_packages(roots)
    libraries = library_packages(roots)
    public = set(sectorflow.__all__)
    problems = []
    for package, root in sorted(packages.items()):
        for path in sorted((root / package).rglob("*.py")):
            module = module_name(path, root, "").lstrip(".")
            for line, target, names in imports(path, module):
                parts = target.split(".")
                where = f"{shown(path)}:{line} imports {target}"
                if parts[0] == "sectorflow":
                    problems += public_api_violations(where, parts, names, public)
                elif parts[0] in packages and parts[0] != package and parts[0] not in libraries:
                    problems.append(f"{where}: a plugin must not import another plugin")
    return problems


def public_api_violations(where: str, parts: list[str], names: list[str], public: set[str]) -> list[str]:
    """The plugin rule for one import of ``sectorflow...``: names of ``sectorflow.__all__``, or a public module."""
    if len(parts) == 1:
        private = [n for n in names if n not in public and n not in PUBLIC_SUBPACKAGES]
        return [f"{where}: {private} not in sectorflow.__all__"] if private else []
    if parts[1] not in PUBLIC_SUBPACKAGES:
        return [f"{where}: sectorflow.{parts[1]} is not public API; use `from sectorflow import ...` or "
                f"sectorflow.host (ask for an export if the name is missing)"]
    return []


def layer_violations(layers: dict[str, Path]) -> list[str]:
    """The plugin rule applied to the layers above the core: their imports of the core (relative ones resolved)."""
    public = set(sectorflow.__all__)
    problems = []
    for layer, folder in sorted(layers.items()):
        for path in sorted(folder.rglob("*.py")):
            module = module_name(path, folder, f"sectorflow.{layer}")
            for line, target, names in imports(path, module):
                parts = target.split(".")
                if parts[0] == "sectorflow" and parts[1:2] != [layer]:
                    problems += public_api_violations(f"{shown(path)}:{line} imports {target}", parts, names, public)
    return problems


def test_plugins_import_only_the_public_api_and_no_other_plugin():
    assert {"sectorflow_echo", "sectorflow_aml"} <= set(plugin_packages(PLUGIN_ROOTS))
    assert library_packages(PLUGIN_ROOTS) == {"sectorflow_text_encoder"}  # the one library among them
    problems = plugin_violations(PLUGIN_ROOTS)
    assert not problems, "\n".join(problems)


def test_serving_compliance_and_federated_import_only_the_public_api():
    assert all(len(list(folder.rglob("*.py"))) >= 10 for folder in LAYERS.values())  # the scan sees each layer
    problems = layer_violations(LAYERS)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("source", ["from ..spec import TaskEvent\n", "from .. import plugins\n",
                                    "from sectorflow.paths import sectorflow_home\n"])
def test_the_layer_scan_catches_violations(tmp_path, source):
    folder = tmp_path / "serving"
    folder.mkdir()
    (folder / "app.py").write_text(f"from .. import TaskSpec, host\nfrom . import auth\n{source}")
    (problem,) = layer_violations({"serving": folder})
    assert problem.startswith(f"{folder / 'app.py'}:3 imports sectorflow")


@pytest.mark.parametrize("source", ["from sectorflow.bundle import make_predictor_config\n",
                                    "from sectorflow import plugins\n", "import sectorflow_aml.schema\n"])
def test_the_plugin_scan_catches_violations(tmp_path, source):
    package = tmp_path / "src" / "sectorflow_rogue"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(source)
    other = tmp_path / "src" / "sectorflow_aml"
    other.mkdir()
    (other / "__init__.py").write_text("")
    (problem,) = plugin_violations([tmp_path / "src"])
    assert problem.startswith(f"{package / '__init__.py'}:1 imports ")


def documented_modules(text: str) -> dict[str, set[str]]:
    """The module tables of docs/architecture.md's "Modules" section: folder (as the line before its table writes it,
    e.g. ``core/src/sectorflow/``) -> the ``.py`` paths of its rows, relative to that folder."""
    section = text.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, set[str]] = {}
    folder = None
    for line in section.splitlines():
        if heading := re.match(r"^`([^`]+/)`", line):
            folder = heading.group(1)
            found[folder] = set()
        elif (row := re.match(r"^\| `([^`]+\.py)` \|", line)) and folder is not None:
            found[folder].add(row.group(1))
    return found


def test_docs_architecture_names_every_module_of_the_package():
    """docs/architecture.md lists every module of the sectorflow package (core, compliance and federated portions),
    each in its folder's table, and lists no module that does not exist."""
    documented = documented_modules((REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    folders = {"core/src/sectorflow/": CORE, **{f"{shown(f)}/": f for name, f in LAYERS.items() if name != "serving"}}
    assert set(documented) == set(folders)
    for shown_folder, folder in folders.items():
        actual = {str(p.relative_to(folder)) for p in folder.rglob("*.py")}
        assert actual - documented[shown_folder] == set(), f"modules of {shown_folder} missing in docs/architecture.md"
        assert documented[shown_folder] - actual == set(), f"docs/architecture.md lists modules {shown_folder} lacks"


def test_the_core_scan_resolves_relative_imports(tmp_path):
    (tmp_path / "serving").mkdir()
    path = tmp_path / "serving" / "app.py"
    path.write_text("from ..compliance import log\nfrom . import auth\nimport fastapi\nfrom .. import compliance\n")
    found = [(t, n) for _, t, n in imports(path, module_name(path, tmp_path, "sectorflow"))]
    assert found == [("sectorflow.compliance", ["log"]), ("sectorflow.serving", ["auth"]), ("fastapi", []),
                     ("sectorflow", ["compliance"])]
