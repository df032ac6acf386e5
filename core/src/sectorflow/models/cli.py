"""``sectorflow models ...``: build a task's INT8 bundle and export its model for other runtimes.

Commands:
    quantize TASK [--margin 0.5] [--out DIR] [--task-path DIR]: the INT8 bundle (:mod:`sectorflow.models.quantize`),
        refused when it reaches less than ``100 - --margin`` percent of fp32's validation metric (relative).
    export TASK --format onnx|paddle [--out DIR] [--tolerance 1e-4]: an ONNX or Paddle bundle
        (:mod:`sectorflow.models.export`), refused when ONNX Runtime differs from the Paddle predictor by more than the
        tolerance.
    list: every task with a model bundle, its fp32 bundle and whether an INT8 bundle is built.

The heavy libraries (paddle2onnx, onnxruntime) are imported only when a command runs.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from .. import plugins
from ..errors import ConfigError
from ..cli_args import complete_task_names
from .int8_store import int8_bundle_dir, is_int8_onnx, manifest_sha256

models_app = typer.Typer(help="Quantize (INT8) and export task models.", no_args_is_help=True)
_err = Console(stderr=True, soft_wrap=True, markup=False, highlight=False)  # paths and names printed as they are


class ExportFormat(str, Enum):
    onnx = "onnx"
    paddle = "paddle"


def _out_path(out: Optional[str]) -> Optional[Path]:
    """``--out`` as a path; ``None`` when not given.

    Raises:
        ConfigError: the value is empty or blank: typer made ``Path("")`` of it, the current folder, which the
            command replaces when it holds a bundle manifest (run from inside a bundle folder, ``--out "$OUT"`` with
            ``OUT`` unset deleted that folder's files) and otherwise refuses only after the whole run.
    """
    if out is None:
        return None
    if not out.strip():
        raise ConfigError(f"--out {out!r} is {'blank' if out else 'empty'}: give the folder to write the bundle to, or "
                          "leave the option out for the default (an empty value is usually an unset shell variable: "
                          "--out \"$OUT_DIR\").")
    return Path(out)


def _task_path(task_path: Optional[str]) -> Optional[Path]:
    """``--task-path`` as a path; ``None`` when not given.

    Raises:
        ConfigError: the value is empty or blank (typer would make ``Path("")`` of it, the current folder, reported
            as ". is not a model bundle"; it is usually an unset shell variable); as ``sectorflow run --task-path``.
    """
    if task_path is None:
        return None
    if not task_path.strip():
        raise ConfigError(f"--task-path {task_path!r} is {'blank' if task_path else 'empty'}: give the path of a model "
                          "bundle folder, or leave the option out for the task's own bundle (an empty value is "
                          "usually an unset shell variable: --task-path \"$MODEL_DIR\").")
    return Path(task_path)


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 1024:.1f} KiB"


@models_app.command("quantize")
def quantize_command(
    task: str = typer.Argument(..., help="Task name, e.g. customer_service.", autocompletion=complete_task_names),
    margin: float = typer.Option(0.5, help="Most the INT8 model may lose, in percent of fp32's validation metric "
                                           "(relative; 0.5: INT8 must reach 99.5 % of fp32)."),
    out: Optional[str] = typer.Option(None, help="Write the INT8 bundle here (default: the store that "
                                                  "Taskflow(precision='int8') reads, under SECTORFLOW_HOME)."),
    task_path: Optional[str] = typer.Option(None, help="An fp32 bundle folder instead of the task's default."),
    num_threads: int = typer.Option(1, min=1, help="CPU threads for the fp32 and INT8 evaluation runs."),
    ops: Optional[str] = typer.Option(None, help="Operators to quantize, comma-separated: MatMul (linear layers), "
                                                 "Gather (embedding tables, stored 8-bit), GRU (recurrent weights, "
                                                 "stored int8), MatMulWeightOnly (linear layers' weights stored "
                                                 "int8, float32 arithmetic); default: the task's own choice."),
    as_json: bool = typer.Option(False, "--json", help="Print the manifest's quantization record as JSON."),
) -> None:
    """Build TASK's INT8 bundle (paddle2onnx, then 8-bit weights of the chosen operators: MatMul, Gather, GRU,
    MatMulWeightOnly) and record its size and validation accuracy against fp32; refuse it when it reaches less than
    100 - --margin percent of fp32's metric (relative)."""
    from .quantize import quantize_bundle

    bundle, folder = _task_path(task_path), _out_path(out)  # before the task's plugin loads
    spec = plugins.get_task(task)
    record = quantize_bundle(spec, task_path=bundle, out=folder, margin=margin, num_threads=num_threads,
                             op_types=None if ops is None else tuple(o.strip() for o in ops.split(",") if o.strip()))
    if as_json:
        typer.echo(json.dumps(record, indent=2, ensure_ascii=False))
        return
    acc, size = record["accuracy"], record["size"]
    _err.print(f"INT8 bundle of {record['source_bundle']} written to {record['out']}")
    _err.print(f"  size     {_mib(size['fp32_bytes'])} fp32 -> {_mib(size['int8_bytes'])} int8 ({size['ratio']:.2f}x)")
    _err.print(f"  {acc['metric']:<8} {100 * acc['fp32']:.2f} fp32 -> {100 * acc['int8']:.2f} int8 "
               f"({100 * acc['relative']:.2f} % of fp32, at least {100 - acc['margin_percent']:g} % asked; {acc['split']})")
    # --out: not the store the default reads; absolute, so the line works from any folder
    where = "" if folder is None else f", task_path={str(Path(record['out']).resolve())!r}"
    _err.print(f"  use it:  Taskflow({spec.name!r}, precision='int8'{where})")


def _positive_tolerance(value: float) -> float:
    if not 0 < value < float("inf"):  # also refuses NaN and inf (a check that cannot fail)
        raise typer.BadParameter(f"{value:g}: give the largest difference allowed, a finite number above 0 "
                                 f"(e.g. 1e-4).")
    return value


@models_app.command("export")
def export_command(
    task: str = typer.Argument(..., help="Task name.", autocompletion=complete_task_names),
    fmt: ExportFormat = typer.Option(..., "--format", "-f", help="onnx (ONNX Runtime, edge runtimes) or paddle "
                                                                  "(Paddle Inference / Paddle Lite's opt tool)."),
    out: Optional[str] = typer.Option(None, help="Output folder (default ./<task>-<format>)."),
    task_path: Optional[str] = typer.Option(None, help="A bundle folder instead of the task's default."),
    tolerance: float = typer.Option(1e-4, callback=_positive_tolerance,
                                    help="Largest absolute output difference allowed against the Paddle predictor "
                                         "(above 0)."),
    num_threads: int = typer.Option(1, min=1, help="CPU threads for the check runs."),
) -> None:
    """Export TASK's model as an ONNX (fp32) or Paddle bundle, checked against the Paddle predictor's outputs."""
    from .export import export_bundle

    bundle, folder = _task_path(task_path), _out_path(out)  # before the task's plugin loads
    spec = plugins.get_task(task)
    target = folder if folder is not None else Path(f"{spec.name}-{fmt.value}")
    check = export_bundle(spec, target, fmt=fmt.value, task_path=bundle, tolerance=tolerance,
                          num_threads=num_threads)
    _err.print(f"{fmt.value} bundle written to {check['out']}: largest absolute difference from the Paddle "
               f"predictor {check['max_abs_diff']:.3g} on {check['output'] or 'every output'} (tolerance {check['tolerance']:g}, "
               f"{check['batches']} {check['inputs']} batches)")


def _rows() -> list[dict[str, Any]]:
    rows = []
    for name, spec in sorted(plugins.registered_tasks().items()):
        if spec.default_bundle is None:
            continue
        int8 = int8_bundle_dir(name, manifest_sha256(spec.default_bundle))
        rows.append({"task": name, "bundle": str(spec.default_bundle), "quantizable": spec.int8.validation is not None,
                     "int8_declared": "int8" in spec.precisions,
                     "int8_bundle": str(int8) if is_int8_onnx(int8) else None})
    return rows


@models_app.command("list")
def list_command(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """Every task with a model bundle: the bundle, whether it can be quantized and where its INT8 bundle is."""
    rows = _rows()
    if as_json:
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    table = Table("task", "fp32 bundle", "validation data", "int8 declared", "int8 bundle")
    for row in rows:
        table.add_row(row["task"], row["bundle"], "yes" if row["quantizable"] else "no",
                      "yes" if row["int8_declared"] else "no", row["int8_bundle"] or "not built")
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``sectorflow models`` to the root app."""
    app.add_typer(models_app, name="models")
