"""The ``sectorflow`` command line (typer). Plugins add sub-commands through ``sectorflow_register_commands``."""

from __future__ import annotations

import getpass
import itertools
import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import plugins
from .errors import ConfigError, InvalidInputError, SectorflowError
from .io import GZIP_MAGIC, field_pairs, gzip_on_stdin, option_values, reader_for
from .models.cli import register as register_models_commands
from .spec import CallContext
from .taskflow import Taskflow, validate_items

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


class OnError(str, Enum):
    skip = "skip"
    reject = "reject"


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
    spec = plugins.get_task(task)
    typer.echo(json.dumps({"task": spec.name, "input": spec.input_model.model_json_schema(),
                           "output": spec.output_model.model_json_schema()}, indent=2, ensure_ascii=False))


def _validated(spec: Any, rows: Iterator[tuple[int, Any]], on_error: OnError,
               skipped: list[dict[str, Any]], context: dict[str, Any] | None = None) -> Iterator[Any]:
    """Validated input items; a bad row (a reader's ``InvalidInputError`` or a model mismatch) raises or is skipped."""
    for row, record in rows:
        if isinstance(record, InvalidInputError):
            if on_error is OnError.reject:
                raise record
            skipped.extend(record.details or [{"row": row, "field": None, "reason": record.message}])
            continue
        try:
            yield validate_items(spec.input_model, [record], first_row=row, context=context)[0]
        except InvalidInputError as exc:
            if on_error is OnError.reject:
                raise
            skipped.extend(exc.details or [])


@app.command("run")
def run_command(
    task: str = typer.Argument(..., help="Task name, e.g. aml."),
    source: str = typer.Argument(..., help="Input file (JSON lines, CSV or a task format; .gz ok) or - for stdin."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write JSON lines here (default stdout)."),
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
                                      "the cell is empty: FIELD=VALUE (text, as a CSV cell), repeatable."),
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
) -> None:
    """Run TASK over an input file and write one JSON line per result; a progress bar goes to stderr.

    A file whose column names differ from the task's input fields is read with --column FIELD=COLUMN (e.g.
    --column transaction_id="Txn Ref" --column amount=Amt), and fields it lacks get --default FIELD=VALUE.

    A stateful task (aml) starts each run with empty state: give the earlier files that a continuous run would
    have seen with --history (e.g. the last 30 days for aml's 30-day window), so that patterns and same-day totals
    that began before SOURCE are found, and a report that fired in an earlier run is updated, not drafted again.
    With --state STATE the state is kept in a store instead: running day 1 then day 2 with the same --state gives
    the results of one run over both days, byte for byte."""
    options = option_values(option)
    _check_output(source, output)
    if task_path is not None and not task_path.strip():
        # typer would make Path("") of it, the current folder, reported as ". is not a model bundle"
        raise ConfigError(f"--task-path {task_path!r} is {'blank' if task_path else 'empty'}: give the path of a model "
                          "bundle folder, or leave the option out for the task's own bundle (an empty value is "
                          "usually an unset shell variable: --task-path \"$MODEL_DIR\").")
    # The reader first: a wrong --format/--column is reported before a model is loaded.
    spec = plugins.get_task(task)
    mapping, defaults = field_pairs("--column", "COLUMN", column), field_pairs("--default", "VALUE", default)
    # The validation context the options make (aml: input_timezone), as Taskflow builds it, for the reader factories
    # that take it (core/io.py reader_for): the reader then knows how its rows will be read.
    context = _input_context(spec, options)
    reader = reader_for(spec, fmt, source, mapping=mapping, defaults=defaults, context=context, encoding=encoding)
    if history:
        _check_history(spec, history, source, output)
    if state is not None:
        _check_state(spec, state, history)
    elif tenant != "default" or discard_unfinished:
        raise ConfigError("--tenant and --discard-unfinished apply to a run with --state STATE; add it or drop them.")
    earlier = [(str(path), reader_for(spec, fmt, path, mapping=mapping, defaults=defaults, context=context,
                                      encoding=encoding))
               for path in history]
    tf = Taskflow(task, device=device, precision=precision, batch_size=batch_size, num_threads=num_threads,
                  task_path=Path(task_path) if task_path is not None else None, **options)
    spool: Optional[str] = None
    if source == "-":
        # Standard input can be read only once: keep it in a temporary file, so that --on-error reject can check
        # every row before any output is written, exactly as for a named file.
        with tempfile.NamedTemporaryFile(prefix="sectorflow-stdin-", delete=False) as handle:
            shutil.copyfileobj(sys.stdin.buffer, handle)
        source = spool = handle.name
    try:
        if spool:
            with open(spool, "rb") as handle:
                if handle.read(2) == GZIP_MAGIC:  # read as text it would be "not UTF-8", which hides the cause
                    raise gzip_on_stdin()
        name = "standard input" if spool else source
        if on_error is OnError.reject:  # every file checked before any state changes or output is written
            for path, read in [*earlier, (source, reader)]:
                _check_rows(tf, read, path, "standard input" if path == spool else path)
        for path, read in earlier:
            _replay(tf, read, path, batch_size, on_error)
        if state is not None:
            _run_file_with_state(tf, reader, source, output, checkpoint_rows, on_error, name, state, tenant,
                                 discard_unfinished)
        else:
            _run_file(tf, reader, source, output, batch_size, on_error, name=name, checked=True)
    finally:
        if spool:
            os.unlink(spool)


def _input_context(spec: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The task's input context for ``options`` (:attr:`TaskSpec.input_context`; ``{}`` for a task without one), made
    from the options the task declares (an unknown one is left to ``Taskflow``, which names it).

    Raises:
        ConfigError: from the task's ``input_context`` for a bad option value (aml: an unknown ``input_timezone``).
    """
    if spec.input_context is None:
        return {}
    return dict(spec.input_context({key: value for key, value in options.items() if key in spec.options}))


def _check_output(source: str, output: Optional[Path]) -> None:
    """Refuse an ``--output`` that is the input file itself (opening it for writing would empty the input).

    Raises:
        ConfigError: ``output`` resolves to the same file as ``source``.
    """
    if output is None or source == "-":
        return
    same = Path(source).resolve() == output.resolve()
    if not same and output.exists() and Path(source).exists():
        same = os.path.samefile(source, output)  # hard links and the like
    if same:
        raise ConfigError(f"--output {output} is the input file {source}: writing would erase the input; "
                          "choose another output path.")


def cli_context() -> CallContext:
    """Who runs this command: the OS user (``getpass.getuser()``, else ``"unknown"``) on this host's name.

    Recorded in every task event of ``sectorflow run`` (and so in the audit log), with channel ``"cli"``.
    """
    try:
        actor = getpass.getuser() or "unknown"
    except (OSError, KeyError, ImportError):  # no login name in the environment and no passwd entry
        actor = "unknown"
    return CallContext(actor=actor, source=socket.gethostname() or "cli", channel="cli")


def _check_history(spec: Any, history: list[Path], source: str, output: Optional[Path]) -> None:
    """Refuse ``--history`` for a stateless task, a missing file, the input itself or the output.

    Raises:
        ConfigError: naming the file and the fix.
    """
    if not spec.stateful:
        raise ConfigError(f"--history: task {spec.name!r} keeps no state between items, so earlier files change "
                          "nothing; drop --history.")
    for path in history:
        if not path.is_file():
            raise ConfigError(f"--history {path}: no such file.")
        if source != "-" and Path(source).exists() and os.path.samefile(path, source):
            raise ConfigError(f"--history {path} is the input file itself: give the files before it.")
        if output is not None and output.exists() and os.path.samefile(path, output):
            raise ConfigError(f"--history {path} is the --output file: writing would erase it.")


def _check_rows(tf: Taskflow, reader: Any, source: str, name: str) -> None:
    """Validate every row of ``source`` (the reject mode's first pass), so that a rejected file produces no partial
    output and every bad row is reported at once (the first alone would send the user round the fix-and-rerun loop
    once per row).

    Raises:
        InvalidInputError: listing the bad rows of ``name``.
    """
    problems: list[dict[str, Any]] = []
    for _ in _validated(tf.spec, reader(source, name=name), OnError.skip, problems, tf.input_context):
        pass
    if problems:
        rows = sorted({p["row"] for p in problems if p.get("row") is not None})
        first = f" (first: row {rows[0]})" if rows else ""
        raise InvalidInputError(f"{len(rows) or len(problems)} bad row(s) in {name}{first}; nothing was written. "
                                "Fix them, or pass --on-error skip to process the good rows.", details=problems)


def _replay(tf: Taskflow, reader: Any, source: str, batch_size: int, on_error: OnError) -> None:
    """Feed ``source`` (a ``--history`` file) through ``tf``, discarding the results; say how many items it had."""
    skipped: list[dict[str, Any]] = []
    count = 0
    items = _validated(tf.spec, reader(source, name=source), on_error, skipped, tf.input_context)
    context = cli_context()
    while chunk := list(itertools.islice(items, max(batch_size, 1024))):
        tf.run(chunk, context=context)
        count += len(chunk)
    bad = len({p["row"] for p in skipped})
    err.print(f"history {escape(str(source))}: {count} item(s) replayed (results not written)"
              + (f", {bad} bad row(s) skipped." if bad else "."))


def _run_file(tf: Taskflow, reader: Any, source: str, output: Optional[Path], batch_size: int,
              on_error: OnError, name: str, checked: bool = False) -> None:
    context = cli_context()
    if on_error is OnError.reject and not checked:
        _check_rows(tf, reader, source, name)
    skipped: list[dict[str, Any]] = []
    # A regular --output file is written under a temporary name next to it and renamed when the run completes: a
    # run that fails part-way (a missing FX rate on row 3,001) leaves no truncated results file, and an earlier file
    # at that path is kept, not emptied. A device or pipe (/dev/null, a FIFO) is written directly.
    target = output.resolve() if output is not None else None  # through a symlink to the file it names
    atomic = target is not None and (target.is_file() or not target.exists())
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}") if atomic else None
    try:
        out = open(partial or output, "w", encoding="utf-8") if output else _utf8_stdout()
    except OSError as exc:
        raise ConfigError(f"Cannot write --output {output}: {exc.strerror}. Choose a path in an existing, "
                          "writable folder.") from exc
    count = 0
    done = False
    try:
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err, transient=True, disable=not err.is_terminal) as progress:
            bar = progress.add_task(f"{tf.spec.name}", total=None)
            items = _validated(tf.spec, reader(source, name=name), on_error, skipped, tf.input_context)
            while chunk := list(itertools.islice(items, max(batch_size, 1024))):
                for result in tf.run(chunk, context=context):
                    out.write(result.model_dump_json() + "\n")
                count += len(chunk)
                progress.update(bar, completed=count)
        done = True
    finally:
        if output:
            out.close()
        if partial:
            if done:
                os.replace(partial, target)
            else:
                partial.unlink(missing_ok=True)
    for problem in skipped:
        err.print(f"[yellow]skipped row {problem['row']}[/]: {escape(_problem_text(problem))}")
    err.print(f"{count} item(s) processed, {len({p['row'] for p in skipped})} row(s) skipped.")
    if count == 0 and not skipped:
        err.print(f"[yellow]warning[/]: no rows in {escape(str(name))} (the file is empty or has only a header).")
    if count == 0 and skipped:
        err.print(f"[red]error[/]: every row of {escape(str(name))} was skipped; nothing was processed.")
        raise typer.Exit(code=1)


def _check_state(spec: Any, state: str, history: list[Path]) -> None:
    """Refuse ``--state`` for a stateless task, a blank value, or together with ``--history``.

    Raises:
        ConfigError: naming the fix.
    """
    if not spec.stateful:
        raise ConfigError(f"--state: task {spec.name!r} keeps no state between items; drop --state.")
    if not state.strip():
        raise ConfigError("--state is empty: give a file path (a SQLite state store, created if missing) or a "
                          "postgresql:// URL.")
    if history:
        raise ConfigError("--history and --state together: the state already holds what earlier runs saw. To seed a "
                          "state from earlier files, run each of them first with the same --state (--output "
                          "/dev/null), oldest first.")


def _run_file_with_state(tf: Taskflow, reader: Any, source: str, output: Optional[Path], checkpoint_rows: int,
                         on_error: OnError, name: str, state: str, tenant: str, discard_unfinished: bool) -> None:
    """:func:`_run_file` with the state kept in a store, checkpointed after each chunk (:mod:`sectorflow.cli_state`)."""
    from .cli_state import prepare, run_with_state

    keeper, run, _ = prepare(tf, state, tenant, source, name, output, discard_unfinished)
    if run is not None:
        err.print(f"resuming the unfinished run of {escape(name)} from row {run.rows_done + 1} (last commit "
                  f"{run.time}); {run.items} item(s) already done.")
    skipped: list[dict[str, Any]] = []
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True, disable=not err.is_terminal) as progress:
        bar = progress.add_task(f"{tf.spec.name}", total=None)
        count = run_with_state(
            keeper, run, reader(source, name=name),
            lambda rows: _validated(tf.spec, rows, on_error, skipped, tf.input_context), output,
            checkpoint_rows, cli_context(), _utf8_stdout, lambda n: progress.update(bar, completed=n))
    for problem in skipped:
        err.print(f"[yellow]skipped row {problem['row']}[/]: {escape(_problem_text(problem))}")
    err.print(f"{count} item(s) processed, {len({p['row'] for p in skipped})} row(s) skipped; state saved to "
              f"{escape(keeper.store.url)} (tenant {escape(tenant)}).")


def _utf8_stdout() -> Any:
    """Standard output, switched to UTF-8 when it is not: JSON lines are UTF-8 (RFC 8259), and under an ASCII or
    legacy console encoding (``PYTHONIOENCODING=ascii``, a Windows code page) a Chinese result was a
    UnicodeEncodeError traceback, or GBK bytes under ``PYTHONIOENCODING=gbk``. A stream that cannot be reconfigured
    (a test's capture) is used as it is."""
    stream = sys.stdout
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    if encoding not in ("utf8", "") and callable(getattr(stream, "reconfigure", None)):
        stream.reconfigure(encoding="utf-8")
    return stream


def _problem_text(problem: dict[str, Any]) -> str:
    field = problem.get("field")
    return f"{field}: {problem.get('reason')}" if field else str(problem.get("reason"))


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
                err.print(f"  row {problem.get('row')}: {escape(_problem_text(problem))}")
            if len(exc.details) > 20:
                err.print(f"  ... and {len(exc.details) - 20} more problem(s).")
        return 2
    except (typer.Abort, KeyboardInterrupt):
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
