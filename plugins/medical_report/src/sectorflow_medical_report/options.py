"""The ``medical_report`` task's options (``Taskflow("medical_report", **options)``, ``sectorflow run -O``):
``{name: one-line help}``. A module of its own so that registering the task imports neither the rules nor the
tagger (see :attr:`sectorflow.TaskSpec.pipeline`)."""

from __future__ import annotations

OPTIONS = {"use_model": "run the Paddle span tagger beside the rules (default true; false = rules only)"}
