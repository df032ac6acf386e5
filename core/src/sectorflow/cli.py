"""The ``sectorflow`` command line (typer): parses flags and hands them on (``sectorflow run`` to
:mod:`sectorflow.batch`, ``sectorflow models`` to :mod:`sectorflow.models.cli`). Plugins add sub-commands through
``sectorflow_register_commands``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from . import plugins
from .batch import AlreadySeen, OnError, problem_text, run_batch
from .cli_args import complete_task_names, field_pairs, option_values
from .errors import InvalidInputError, SectorflowError
from .models.cli import register as register_models_commands
from .stopping import Stopped
from .taskflow import Taskflow

app = typer.Typer(help="sectorflow: offline, auditable ML pipelines on PaddlePaddle.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
err = Console(stderr=True, soft_wrap=True)
register_models_commands(app)  # sectorflow models quantize|export|list (core/src/sectorflow/models/cli.py)


def _versions(value: bool) -> None:
    """``sectorflow --version``: this package's version, then each installed distribution that registers entry points
    in the ``sectorflow`` group (the plugins) and Paddle's, read from package metadata (nothing is imported)."""
    if not value:
        return
    from importlib import metadata

    from . import __version__

    lines = [f"sectorflow {__version__}"]
    seen: set[str] = set()
    for point in metadata.entry_points(group="sectorflow"):
        dist = getattr(point, "dist", None)
        name = dist.metadata["Name"] if dist is not None else None
        if name and name != "sectorflow" and name not in seen:
            seen.add(name)
            lines.append(f"{name} {dist.version}")
    for name in ("paddlepaddle", "paddlepaddle-gpu"):
        try:
            lines.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    typer.echo("\n".join([lines[0], *sorted(lines[1:])]))
    raise typer.Exit()


@app.callback()
def _main_options(version: bool = typer.Option(False, "--version", is_eager=True, callback=_versions,
                                               help="Print the versions of sectorflow, its plugins and Paddle, "
                                                    "and exit.")) -> None:
    """sectorflow: offline, auditable ML pipelines on PaddlePaddle."""


@app.command("tasks")
def tasks_command(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """List every registered task with its plugin, version and languages."""
    rows = Taskflow.tasks()
    if as_json:
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    # Descriptions go in a list under the table: as a seventh column they were squeezed to one word per line in
    # an 80-column terminal.
    # A light box (no vertical rules) and whole names: with a full grid at 80 columns the names were folded
    # ("customer_ser" / "vice"); device and precision lists wrap between words instead.
    table = Table("task", "plugin", "version", "languages", "devices", "precisions", box=box.SIMPLE_HEAD,
                  padding=(0, 1), collapse_padding=True, pad_edge=False)
    for index, column in enumerate(table.columns):
        key = ("task", "plugin", "version")[index] if index < 3 else None
        longest = max((len(str(row[key])) for row in rows), default=0) if key else 0
        column.min_width = max(len(str(column.header)), longest)  # whole headers and names, also at 80 columns
        column.overflow = "fold"
        column.no_wrap = key is not None  # task, plugin and version on one line
    for row in rows:
        table.add_row(row["task"], row["plugin"], row["version"], ", ".join(row["languages"]),
                      ", ".join(row["devices"]), ", ".join(row["precisions"]))
    console = Console()
    console.print(table)
    for row in rows:
        console.print(Padding(f"[bold]{escape(row['task'])}[/bold]: {escape(row['description'])}", (0, 0, 0, 2)))


@app.command("schema")
def schema_command(task: str) -> None:
    """Print the JSON Schema of a task's input and output items."""
    typer.echo(json.dumps(plugins.get_task(task).schema(), indent=2, ensure_ascii=False))


@app.command("run")
def run_command(
    task: str = typer.Argument(..., help="Task name, e.g. aml.", autocompletion=complete_task_names),
    source: str = typer.Argument(..., help="Input file (JSON lines, CSV or a task format; .gz ok) or - for stdin."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write JSON lines here (default stdout); "
                                          "gzip-compressed when the name ends in .gz."),
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="Input format: jsonl, csv, or a task's own (any case). Default: by "
                                       "the file's suffix (.csv; .jsonl, .json, .ndjson or none: jsonl; a task "
                                       "format's name); another suffix (.txt) needs --format."),
    device: str = typer.Option("cpu", help="cpu, gpu[:N], npu[:N], mlu[:N], xpu[:N] or auto."),
    precision: str = typer.Option("fp32", help="fp32, fp16, bf16 or int8."),
    batch_size: int = typer.Option(256, help="Items per model forward pass."),
    num_threads: Optional[int] = typer.Option(None, min=1, help="CPU threads (default SECTORFLOW_NUM_THREADS or 1)."),
    task_path: Optional[str] = typer.Option(None, help="A model bundle folder to use instead of the default."),
    on_error: OnError = typer.Option(OnError.reject, help="Bad rows: reject the whole input, or skip and report."),
    option: list[str] = typer.Option([], "--option", "-O", help="Task option KEY=VALUE (JSON value), repeatable."),
    column: list[str] = typer.Option([], "--column", help="Read input field FIELD from the file's column COLUMN: "
                                     "FIELD=COLUMN (quote names with spaces), repeatable; csv, jsonl and the "
                                     "task formats that support it."),
    default: list[str] = typer.Option([], "--default", help="Value of FIELD where the file has no such column or "
                                      "the cell is empty: FIELD=VALUE (text, as a CSV cell), repeatable; not for an id field "
                                      "(aml's transaction_id: map the file's id column with --column)."),
    encoding: Optional[str] = typer.Option(None, "--encoding", help="Text encoding of the input files: gbk, gb18030, utf-16, utf-8, ... (default auto: detected per file, and said if not UTF-8)."),
    history: list[Path] = typer.Option([], "--history", help="Stateful tasks (aml): an earlier input file fed "
                                       "first, to rebuild the state a continuous run would have (sliding window, "
                                       "same-day totals, alert cooldowns); its results are not written. Read like "
                                       "SOURCE (same --format, --column, --default, options); repeatable, oldest "
                                       "first."),
    state: Optional[str] = typer.Option(None, "--state", help="Stateful tasks (aml): a state store (SQLite file, "
                                        "created if missing, or a postgresql:// URL) to load the state from and save "
                                        "it to at the end, so day 2 continues day 1 exactly; a run killed part-way "
                                        "resumes when the same command is run again."),
    tenant: str = typer.Option("default", "--tenant", help="With --state: whose state in the store."),
    checkpoint_rows: int = typer.Option(8192, "--checkpoint-rows", min=1, help="With --state: items per checkpoint "
                                        "(results fsync'd, then one store commit; a killed run redoes at most this "
                                        "many). Give the same value when resuming."),
    discard_unfinished: bool = typer.Option(False, "--discard-unfinished", help="With --state: drop an unfinished "
                                            "run's changes (the state goes back to where it started) and start "
                                            "this one."),
    already_seen: AlreadySeen = typer.Option(AlreadySeen.skip, "--already-seen", help="With --state: an item an "
                                             "earlier run already fed into the state (aml: the same transaction "
                                             "id) is skipped, not run or written again, and counted at the end; "
                                             "refuse: the input is refused before anything runs."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Show no progress on stderr (by default a bar on "
                                     "a terminal, else a plain line every SECTORFLOW_PROGRESS_INTERVAL seconds, "
                                     "default 5)."),
) -> None:
    """Run TASK over an input file and write one JSON line per result; progress goes to stderr (bytes of the file
    read, percent, items, time left: a bar on a terminal, else a plain line every few seconds; --no-progress: none).

    A file whose column names differ from the task's input fields is read with --column FIELD=COLUMN (e.g.
    --column transaction_id="Txn Ref" --column amount=Amt), and fields it lacks get --default FIELD=VALUE.

    A stateful task (aml) starts each run with empty state: give the earlier files that a continuous run would
    have seen with --history (e.g. the last 30 days for aml's 30-day window), so that patterns and same-day totals
    that began before SOURCE are found, and a report that fired in an earlier run is updated, not drafted again.
    With --state STATE the state is kept in a store instead: running day 1 then day 2 with the same --state gives
    the results of one run over both days, byte for byte."""
    code = run_batch(task, source, output=output, fmt=fmt, device=device, precision=precision,
                     batch_size=batch_size, num_threads=num_threads, task_path=task_path, on_error=on_error,
                     options=option_values(option), mapping=field_pairs("--column", "COLUMN", column),
                     defaults=field_pairs("--default", "VALUE", default), encoding=encoding, history=history,
                     state=state, tenant=tenant, checkpoint_rows=checkpoint_rows,
                     discard_unfinished=discard_unfinished, progress=not no_progress, already_seen=already_seen)
    if code:
        raise typer.Exit(code=code)


_commands_loaded = False


def _load_plugin_commands() -> None:
    global _commands_loaded
    if not _commands_loaded:
        plugins.get_plugin_manager().hook.sectorflow_register_commands(app=app)
        _commands_loaded = True


def _literal_help(command: Any) -> None:
    """Escape Rich markup in the help texts of ``command`` and every sub-command (plugins' included), so that they
    print as written: typer renders help as Rich markup, which swallowed ``[[keys]]`` in ``serve-key``'s help
    ("the [] entry"). ``gpu[:N]`` and the like are not markup and stay as they are."""
    if getattr(command, "rich_markup_mode", None) == "rich":
        for attribute in ("help", "short_help", "epilog"):
            text = getattr(command, attribute, None)
            if text:
                setattr(command, attribute, escape(text))
        for param in getattr(command, "params", []):
            if getattr(param, "help", None):
                param.help = escape(param.help)
    for sub in getattr(command, "commands", {}).values():
        _literal_help(sub)


def _ended_early(cause: EOFError) -> str:
    """What the CLI says for an ``EOFError`` that escaped a command (click turns it into ``Abort``, which was
    reported as "stopped by SIGINT", exit 130): an input ended before it was complete, not a signal. Files opened
    with :func:`sectorflow.open_text` raise a typed error naming the file instead; this is for any other reader."""
    reason = str(cause).rstrip(". ") or "EOFError"
    return (f"An input ended before it was complete ({reason}); no signal stopped the command. Check the input files "
            "(a truncated .gz file: gzip -t FILE) and give complete ones.")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sectorflow`` script. A ``SectorflowError`` prints its message and exits with 2."""
    try:
        _load_plugin_commands()
        # With standalone_mode=False, click returns a command's typer.Exit(code) as the return value.
        command = typer.main.get_command(app)
        _literal_help(command)
        returned = command(args=argv, prog_name="sectorflow", standalone_mode=False)
    except SectorflowError as exc:
        err.print(f"[red]error[/]: {escape(str(exc))}")
        if isinstance(exc, InvalidInputError) and isinstance(exc.details, list):
            for problem in exc.details[:20]:
                err.print(f"  row {problem.get('row')}: {escape(problem_text(problem))}")
            if len(exc.details) > 20:
                err.print(f"  ... and {len(exc.details) - 20} more problem(s).")
        return 2
    except Stopped as stop:  # SIGTERM / SIGINT during a command that stops cleanly (sectorflow.stopping)
        err.print(escape(stop.message()), highlight=False)
        return stop.exit_code
    except (typer.Abort, KeyboardInterrupt) as exc:  # Ctrl-C outside a command that stops cleanly (e.g. loading)
        if isinstance(exc.__cause__, EOFError):  # click makes an EOFError escaping a command an Abort too
            err.print(f"[red]error[/]: {escape(_ended_early(exc.__cause__))}")
            return 2
        err.print("stopped by SIGINT.", highlight=False)
        return 130
    except SystemExit as exc:
        return int(exc.code or 0)
    except Exception as exc:
        # Usage errors arrive here with standalone_mode=False. They are click's ClickException, which recent typer
        # releases vendor (typer._click), so recognise them by their interface rather than by click's class.
        show, code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(code, int):
            show()
            return code
        raise
    return returned if isinstance(returned, int) else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
