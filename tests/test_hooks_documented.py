"""docs/hooks.md documents every hook of core/src/sectorflow/hookspecs.py with its exact signature, and nothing else."""

from __future__ import annotations

import inspect
import re

from core_support import REPO_ROOT
from sectorflow import hookspecs

DOC = REPO_ROOT / "docs" / "hooks.md"


class _Unquoted(str):
    """An annotation string that ``inspect`` prints as written (the hookspecs use postponed annotations)."""

    def __repr__(self) -> str:
        return str(self)


def hookspec_functions() -> dict[str, object]:
    marker = f"{hookspecs.PROJECT_NAME}_spec"
    return {name: fn for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(fn, marker)}


def signature_line(fn) -> str:
    """``def name(params) -> ret`` as ``inspect.signature`` renders it, annotation strings unquoted."""
    sig = inspect.signature(fn)
    sig = sig.replace(parameters=[p.replace(annotation=_Unquoted(p.annotation)) for p in sig.parameters.values()],
                      return_annotation=_Unquoted(sig.return_annotation))
    return f"def {fn.__name__}{sig}"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_every_hook_is_documented_with_its_exact_signature():
    text = DOC.read_text(encoding="utf-8")
    blocks = python_blocks(text)
    hooks = hookspec_functions()
    assert {"sectorflow_register_tasks", "sectorflow_register_trainables", "sectorflow_task_event",
            "sectorflow_register_commands"} <= set(hooks)  # the scan finds the specs (a new hook needs a section)
    for name, fn in hooks.items():
        line = signature_line(fn)
        assert any(block.strip() == line for block in blocks), f"docs/hooks.md lacks a code block `{line}`"
        section = text.split(f"## `{name}`", 1)
        assert len(section) == 2, f"docs/hooks.md has no section '## `{name}`'"
        body = section[1].split("\n## ", 1)[0]
        for part in ("**What:**", "**When:**", "**Returns:**"):
            assert part in body, f"section {name} lacks {part}"


def test_no_documented_hook_is_missing_from_the_code():
    documented = set(re.findall(r"^def (sectorflow_\w+)\(", DOC.read_text(encoding="utf-8"), flags=re.M))
    assert documented == set(hookspec_functions())


def test_signature_rendering_sees_changes():
    def sectorflow_task_event(event: TaskEvent, *, strict: bool = False) -> None:  # noqa: F821 (postponed)
        """A changed spec must render differently."""

    assert signature_line(sectorflow_task_event) == (
        "def sectorflow_task_event(event: TaskEvent, *, strict: bool = False) -> None")
