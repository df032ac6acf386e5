"""Structure figures of a sectorflow tree (issue 26): source modules per package folder, import cycles (mutual pairs
and strongly connected groups, counting every import: lazy, local and type-checking ones too) and the largest module.

    python3 scripts/structure_figures.py .                                              # this checkout
    git archive REV | tar -x -C /tmp/rev && python3 scripts/structure_figures.py /tmp/rev   # another revision

Understands the layout before issue 26 (core/, compliance/, federated/ as package folders) and after it (every
package under a src/ folder). Tests, scripts, benchmarks, deploy files and build outputs are not counted. Standard
library only; prints the figures, writes nothing.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

SKIPPED = {"tests", "scripts", "benchmarks", "deploy", "samples", "docs", ".ci", ".venv", "build", "dist"}


def source_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py")
                  if not SKIPPED & set(p.relative_to(root).parts) and not any(
                      part.endswith(".egg-info") for part in p.parts) and p.name != "conftest.py"
                  and (p.relative_to(root).parts[0] in {"core", "compliance", "federated"} or "src" in p.parts))


def module_name(path: Path, root: Path) -> tuple[str, bool]:
    """(dotted module name, is a package's __init__) of a source file, in either layout."""
    parts = list(path.relative_to(root).parts)
    if "src" in parts:
        parts = parts[parts.index("src") + 1:]
    elif parts[0] == "core":
        parts = ["sectorflow", *parts[1:]]
    else:  # compliance/, federated/ before issue 26
        parts = ["sectorflow", *parts]
    parts[-1] = parts[-1].removesuffix(".py")
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def import_graph(modules: dict[str, tuple[Path, bool]]) -> dict[str, set[str]]:
    """module -> the modules of the tree it imports (any import statement anywhere in it, relative ones resolved)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for name, (path, is_package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [target, *(f"{target}.{alias.name}" for alias in node.names)]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):  # a package's own __init__
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]], nodes: list[str]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while (w := stack.pop()) != v:
                group.append(w)
            if group:
                found.append(sorted([v, *group]))

    sys.setrecursionlimit(10_000)
    for v in nodes:
        if v not in index:
            visit(v)
    return found


def main(root: Path) -> None:
    files = source_files(root)
    modules: dict[str, tuple[Path, bool]] = {}
    for p in files:
        name, is_package = module_name(p, root)
        modules[name] = (p, is_package)
    per_folder: dict[str, int] = defaultdict(int)
    for p in files:
        per_folder[str(p.parent.relative_to(root))] += 1
    graph = import_graph(modules)
    pairs = sorted({tuple(sorted((a, b))) for a in graph for b in graph[a] if a in graph.get(b, ())})
    groups = cycles(graph, sorted(modules))
    largest = max(files, key=lambda p: len(p.read_text(encoding="utf-8").splitlines()))
    print(f"modules: {len(files)}")
    for folder, n in sorted(per_folder.items()):
        print(f"  {folder}: {n}")
    print(f"mutual import pairs: {len(pairs)}")
    for a, b in pairs:
        print(f"  {a} <-> {b}")
    print(f"cycles (strongly connected groups of more than one module): {len(groups)}")
    for group in groups:
        print(f"  {' -> '.join(group)}")
    print(f"largest module: {largest.relative_to(root)} ({len(largest.read_text(encoding='utf-8').splitlines())} lines)")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
