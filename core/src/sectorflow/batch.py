"""The batch runner behind ``sectorflow run``: a task over input files, one JSON line per result.

:func:`run_batch` takes the parsed command line (the typer command in :mod:`sectorflow.cli` only parses flags) and
runs it in this order, so that a mistake is reported before a model loads and every input file is read once:

1. the task's spec is looked up once and each file's reader planned (:func:`sectorflow.input_files.plan_reader`:
   an unknown ``--format``, a ``--column`` naming no input field, a suffix with no format are refused here);
2. ``Taskflow(spec, ...)`` checks the options and builds the task's input context once
   (:meth:`TaskSpec.input_context`), then loads the model; the readers are made with that context;
3. each ``--history`` file, then the input, is read and validated once, chunk by chunk, and run through the task.

``--on-error reject`` (the default) writes nothing for an input with a bad row: the results go to a temporary file
(``.<output>.partial-<pid>`` next to a regular ``--output``, else a spool in the temporary folder for standard output,
a device or a pipe) that is renamed or copied to its place only once the whole input was good. After the first bad
row no more items run; the rest of the file is still validated, so that every bad row is listed at once (the first
alone would send the user round the fix-and-rerun loop once per row). ``--on-error skip`` streams results as they
come and reports the skipped rows at the end.

``--state`` runs (:mod:`sectorflow.cli_state`) with ``--output`` read their input once too: a bad row stops the run,
the rest is validated, and the run is discarded in the store (the state back to where the run started, as
``--discard-unfinished`` does) with its partial output. A ``--state`` run to standard output still validates the
whole input first: results already written to stdout at each checkpoint cannot be taken back.
"""

from __future__ import annotations

import contextlib
import getpass
import itertools
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from enum import Enum
from pathlib import Path
from typing import IO, Any, Optional

from rich.console import Console
from rich.markup import escape

from . import plugins
from .errors import ConfigError, InvalidInputError, SectorflowError
from .input_files import GZIP_MAGIC, gzip_on_stdin, plan_reader
from .output_files import compressed, open_results, partial_path, remove_stale_partials
from .progress import RunProgress
from .spec import CallContext
from .state_lock import state_lock
from .stopping import Stopped, check as check_stopped, install as install_signal_handlers, stop_on_signals
from .taskflow import Taskflow
from .validation import validate_items

err = Console(stderr=True, soft_wrap=True)

CHUNK_ITEMS = 1024
"""Items read and validated per ``Taskflow.run`` call at the least (``batch_size`` when larger)."""


class OnError(str, Enum):
    """What ``sectorflow run`` does with a bad row: ``reject`` the whole input (nothing written), or ``skip`` it and
    report it at the end."""

    skip = "skip"
    reject = "reject"


class AlreadySeen(str, Enum):
    """What a ``sectorflow run --state`` does with an item an earlier run already fed into the state (its
    :meth:`~sectorflow.Pipeline.item_keys` key is there: aml's transaction id): ``skip`` it (not run, not written,
    counted at the end) or ``refuse`` the input before anything runs."""

    skip = "skip"
    refuse = "refuse"


def cli_context() -> CallContext:
    """Who runs this command: the OS user (``getpass.getuser()``, else ``"unknown"``) on this host's name.

    Recorded in every task event of ``sectorflow run`` (and so in the audit log), with channel ``"cli"``.
    """
    try:
        actor = getpass.getuser() or "unknown"
    except (OSError, KeyError, ImportError):  # no login name in the environment and no passwd entry
        actor = "unknown"
    return CallContext(actor=actor, source=socket.gethostname() or "cli", channel="cli")


def run_batch(task: str, source: str, *, output: Optional[Path], fmt: Optional[str], device: str, precision: str,
              batch_size: int, num_threads: Optional[int], task_path: Optional[str], on_error: OnError,
              options: dict[str, Any], mapping: dict[str, str], defaults: dict[str, str], encoding: Optional[str],
              history: list[Path], state: Optional[str], tenant: str, checkpoint_rows: int,
              discard_unfinished: bool, progress: bool = True, already_seen: AlreadySeen = AlreadySeen.skip) -> int:
    """Run ``task`` over ``source`` (a path or ``-`` for standard input) as ``sectorflow run`` does; the exit code
    (0, or 1 when every row was skipped). Arguments are the command's options, parsed (``options`` from ``-O``,
    ``mapping``/``defaults`` from ``--column``/``--default``, ``progress=False`` from ``--no-progress``: no progress
    on standard error, :mod:`sectorflow.progress`).

    Raises:
        ConfigError: a bad option, format, mapping, output path, ``--history`` or ``--state`` (exit 2).
        InvalidInputError: a rejected input: every bad row in ``details`` (exit 2); a file that cannot be read.
        SectorflowError: from the task (unknown task, device, bundle, ...).
        Stopped: SIGTERM or SIGINT arrived (:mod:`sectorflow.stopping`); no partial output is left, a ``--state``
            run's store holds its last checkpoint.
    """
    with stop_on_signals(), contextlib.ExitStack() as held:
        return _run_batch(held, task, source, output=output, fmt=fmt, device=device, precision=precision,
                          batch_size=batch_size, num_threads=num_threads, task_path=task_path, on_error=on_error,
                          options=options, mapping=mapping, defaults=defaults, encoding=encoding, history=history,
                          state=state, tenant=tenant, checkpoint_rows=checkpoint_rows,
                          discard_unfinished=discard_unfinished, progress=progress, already_seen=already_seen)


def _run_batch(held: contextlib.ExitStack, task: str, source: str, *, output: Optional[Path], fmt: Optional[str],
               device: str, precision: str, batch_size: int, num_threads: Optional[int], task_path: Optional[str],
               on_error: OnError,
               options: dict[str, Any], mapping: dict[str, str], defaults: dict[str, str], encoding: Optional[str],
               history: list[Path], state: Optional[str], tenant: str, checkpoint_rows: int,
               discard_unfinished: bool, progress: bool, already_seen: AlreadySeen = AlreadySeen.skip) -> int:
    _check_output(source, output)
    if task_path is not None and not task_path.strip():
        # typer would make Path("") of it, the current folder, reported as ". is not a model bundle"
        raise ConfigError(f"--task-path {task_path!r} is {'blank' if task_path else 'empty'}: give the path of a model "
                          "bundle folder, or leave the option out for the task's own bundle (an empty value is "
                          "usually an unset shell variable: --task-path \"$MODEL_DIR\").")
    # The reader first: a wrong --format/--column is reported before a model is loaded.
    spec = plugins.get_task(task)
    plan = plan_reader(spec, fmt, source, mapping=mapping, defaults=defaults, encoding=encoding)
    if history:
        _check_history(spec, history, source, output)
    if state is not None:
        _check_state(spec, state, history)
    elif tenant != "default" or discard_unfinished or already_seen is not AlreadySeen.skip:
        raise ConfigError("--tenant, --discard-unfinished and --already-seen apply to a run with --state STATE; add it "
                          "or drop them.")
    if state is not None:
        held.enter_context(state_lock(state))  # one run at a time on a state file, until run_batch returns
    earlier_plans = [(str(path), plan_reader(spec, fmt, path, mapping=mapping, defaults=defaults, encoding=encoding))
                     for path in history]
    tf = Taskflow(spec, device=device, precision=precision, batch_size=batch_size, num_threads=num_threads,
                  task_path=Path(task_path) if task_path is not None else None, **options)
    install_signal_handlers()  # importing Paddle and creating the predictor installed Paddle's C++ handlers
    # The validation context the options make (aml: input_timezone), built once by Taskflow, for the reader
    # factories that take it: the reader then knows how its rows will be read.
    context = tf.input_context or {}
    reader = plan.make(context)
    earlier = [(path, made.make(context)) for path, made in earlier_plans]
    spool: Optional[str] = None
    if source == "-":
        # Standard input can be read only once: keep it in a temporary file, which a --state run hashes and
        # resumes from, and whose first bytes tell gzip data apart.
        with tempfile.NamedTemporaryFile(prefix="sectorflow-stdin-", delete=False) as handle:
            shutil.copyfileobj(sys.stdin.buffer, handle)
        source = spool = handle.name
    try:
        if spool:
            with open(spool, "rb") as handle:
                if handle.read(2) == GZIP_MAGIC:  # read as text it would be "not UTF-8", which hides the cause
                    raise gzip_on_stdin()
        name = "standard input" if spool else source
        if state is not None:
            if on_error is OnError.reject and output is None:  # stdout cannot be taken back: check every row first
                _check_rows(tf, reader, source, name)
            ids_by_row = bool(getattr(spec.formats.get(plan.fmt), "ids_by_row", False))  # (aml: amlsim-<row>)
            return _run_file_with_state(tf, reader, source, output, checkpoint_rows, on_error, name, state, tenant,
                                        discard_unfinished, progress, already_seen, ids_by_row)
        for path, read in earlier:
            _replay(tf, read, path, batch_size, on_error)
        return _run_file(tf, reader, source, output, batch_size, on_error, name=name, progress=progress)
    finally:
        if spool:
            os.unlink(spool)


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


def _validated(spec: Any, rows: Iterator[tuple[int, Any]], on_error: OnError, problems: list[dict[str, Any]],
               context: dict[str, Any] | None = None, numbers: list[int] | None = None,
               refusals: Callable[[list[Any]], list[dict[str, Any]]] | None = None,
               check_all: bool = False) -> Iterator[Any]:
    """Validated input items. A bad row (a reader's ``InvalidInputError`` or a model mismatch) is added to
    ``problems``; with ``OnError.reject`` no item is yielded after the first one, but the rest of the rows are still
    validated, so that ``problems`` ends up listing every bad row. ``numbers``: the row number of each item yielded
    is appended there. ``refusals`` (the pipeline's :meth:`~sectorflow.Pipeline.refusals`): what the task would
    refuse of an item that does not run (rejected already, or every item with ``check_all``) is a bad row too (aml:
    a transaction without an FX rate)."""
    for row, record in rows:
        if isinstance(record, InvalidInputError):
            problems.extend(record.details or [{"row": row, "field": None, "reason": record.message}])
            continue
        try:
            item = validate_items(spec.input_model, [record], first_row=row, context=context)[0]
        except InvalidInputError as exc:
            problems.extend(exc.details or [])
            continue
        if refusals is not None and (check_all or (on_error is OnError.reject and problems)):
            problems.extend(_refused_rows(refusals, [item], [row]))
        if on_error is OnError.reject and problems:
            continue  # rejected already: validate only, nothing more runs
        if numbers is not None:
            numbers.append(row)
        yield item


def _refused_rows(refusals: Callable[[list[Any]], list[dict[str, Any]]], items: list[Any],
                  numbers: list[int]) -> list[dict[str, Any]]:
    """The bad rows (``{"row", "field", "reason"}``) of what ``refusals(items)`` refuses; ``numbers``: the items' rows."""
    return [{"row": numbers[entry["item"]], "field": entry.get("field"), "reason": entry.get("reason")}
            for entry in refusals(items) if isinstance(entry, dict) and isinstance(entry.get("item"), int)
            and 0 <= entry["item"] < len(items)]


def _refusals(tf: Taskflow) -> Callable[[list[Any]], list[dict[str, Any]]]:
    """The task pipeline's :meth:`~sectorflow.Pipeline.refusals` (configuration only: the default pipeline's)."""
    return tf._current[0].refusals


def _run_chunk(tf: Taskflow, chunk: list[Any], numbers: list[int], context: CallContext, on_error: OnError,
               problems: list[dict[str, Any]]) -> list[Any]:
    """``tf.run(chunk)``; with ``OnError.skip``, the items a pipeline refuses before changing any state (a
    :class:`SectorflowError` whose ``details["items"]`` lists ``{"item": index in the call, "field", "reason"}``: an
    AML transaction in a currency with no FX rate) are skipped as bad rows (``numbers``: their row numbers) and the
    others run. Anything else, and any refusal in reject mode, is raised."""
    return _run_kept(tf, chunk, numbers, context, on_error, problems)[1]


def _run_kept(tf: Taskflow, chunk: list[Any], numbers: list[int], context: CallContext, on_error: OnError,
              problems: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """:func:`_run_chunk` returning ``(the items that ran, their results)``."""
    while chunk:
        try:
            return chunk, tf.run(chunk, context=context)
        except SectorflowError as exc:
            refused = exc.details.get("items") if isinstance(exc.details, dict) else None
            bad = {entry["item"]: entry for entry in refused or () if isinstance(entry, dict)
                   and isinstance(entry.get("item"), int) and 0 <= entry["item"] < len(chunk)}
            if not bad or on_error not in (OnError.skip, OnError.reject):
                raise
            problems.extend({"row": numbers[i], "field": entry.get("field"), "reason": entry.get("reason")}
                            for i, entry in sorted(bad.items()))
            if on_error is OnError.reject:  # bad rows too, listed with the others; nothing more runs
                return [], []
            keep = [i for i in range(len(chunk)) if i not in bad]
            chunk, numbers = [chunk[i] for i in keep], [numbers[i] for i in keep]
    return [], []


def _rejected(problems: list[dict[str, Any]], name: str) -> InvalidInputError:
    """The error of a rejected input, listing its bad rows (in row order: the rows the task refused, e.g. without an
    FX rate, are found after the rows that do not validate)."""
    problems = sorted(problems, key=lambda p: (p.get("row") is None, p.get("row") or 0))
    rows = sorted({p["row"] for p in problems if p.get("row") is not None})
    first = f" (first: row {rows[0]})" if rows else ""
    return InvalidInputError(f"{len(rows) or len(problems)} bad row(s) in {name}{first}; nothing was written. "
                             "Fix them, or pass --on-error skip to process the good rows.", details=problems)


def _chunks(tf: Taskflow, reader: Any, source: str, name: str, batch_size: int, on_error: OnError,
            problems: list[dict[str, Any]]) -> Iterator[tuple[list[Any], list[int]]]:
    """The validated items of ``source`` in chunks of ``max(batch_size, CHUNK_ITEMS)``, read once, each with the
    row numbers of its items.

    Raises (while iterating, after the last row): InvalidInputError listing every bad row, in reject mode."""
    numbers: list[int] = []
    refusals = _refusals(tf) if on_error is OnError.reject else None
    items = _validated(tf.spec, reader(source, name=name), on_error, problems, tf.input_context, numbers, refusals)
    while chunk := list(itertools.islice(items, max(batch_size, CHUNK_ITEMS))):
        if on_error is OnError.reject and problems:  # read, never run: what the task would refuse of it is listed too
            problems.extend(_refused_rows(refusals, chunk, numbers[:len(chunk)]))  # type: ignore[arg-type]
            break
        rows = numbers[:len(chunk)]
        del numbers[:len(chunk)]
        yield chunk, rows
    if on_error is OnError.reject and problems:
        for _ in items:  # the rest of the file, validated only
            pass
        raise _rejected(problems, name)


def _check_rows(tf: Taskflow, reader: Any, source: str, name: str) -> None:
    """Validate every row of ``source`` before a ``--state`` run (see the module docstring).

    Raises:
        InvalidInputError: listing the bad rows of ``name``.
    """
    problems: list[dict[str, Any]] = []
    for _ in _validated(tf.spec, reader(source, name=name), OnError.skip, problems, tf.input_context,
                        refusals=_refusals(tf), check_all=True):
        pass
    if problems:
        raise _rejected(problems, name)


def _replay(tf: Taskflow, reader: Any, source: str, batch_size: int, on_error: OnError) -> None:
    """Feed ``source`` (a ``--history`` file) through ``tf``, discarding the results; say how many items it had."""
    skipped: list[dict[str, Any]] = []
    count = 0
    context = cli_context()
    for chunk, rows in _chunks(tf, reader, source, source, batch_size, on_error, skipped):
        count += len(_run_chunk(tf, chunk, rows, context, on_error, skipped))
    bad = len({p["row"] for p in skipped})
    err.print(f"history {escape(str(source))}: {count} item(s) replayed (results not written)"
              + (f", {bad} bad row(s) skipped." if bad else "."))


def _open_results(output: Optional[Path], on_error: OnError) -> tuple[IO[str], Optional[Path], Optional[Path], Any]:
    """Where the results go while the run lasts: ``(stream, partial file, final path, spool target)``.

    A regular ``--output`` file is written under a temporary name next to it and renamed when the run completes: a
    run that fails part-way (a missing FX rate on row 3,001) or is rejected leaves no truncated results file, and an
    earlier file at that path is kept, not emptied. Standard output, a device or a pipe (/dev/null, a FIFO) is
    written directly in skip mode; in reject mode through a spool in the temporary folder, copied there at the end.
    An ``--output`` whose name ends in ``.gz`` is written gzip-compressed (:mod:`sectorflow.output_files`).
    """
    target = output.resolve() if output is not None else None  # through a symlink to the file it names
    atomic = target is not None and (target.is_file() or not target.exists())
    gz = compressed(output)  # results.jsonl.gz: gzip data (sectorflow.output_files)
    if atomic:
        for stale, size in remove_stale_partials(target):  # type: ignore[arg-type]
            err.print(f"removed {escape(str(stale))} ({size:,} bytes), the partial output of an earlier run that was "
                      "killed")
        partial = partial_path(target)  # type: ignore[arg-type]
        try:
            return open_results(partial, gz), partial, target, None
        except OSError as exc:
            raise ConfigError(f"Cannot write --output {output}: {exc.strerror}. Choose a path in an existing, "
                              "writable folder.") from exc
    try:
        final = open_results(output) if output else _utf8_stdout()
    except OSError as exc:
        raise ConfigError(f"Cannot write --output {output}: {exc.strerror}. Choose a path in an existing, "
                          "writable folder.") from exc
    if on_error is OnError.reject:
        return tempfile.TemporaryFile("w+", encoding="utf-8", prefix="sectorflow-results-"), None, None, final
    return final, None, None, None


def _run_file(tf: Taskflow, reader: Any, source: str, output: Optional[Path], batch_size: int,
              on_error: OnError, name: str, progress: bool = True) -> int:
    """Run ``source`` through ``tf`` and write the results (see :func:`_open_results`); the exit code."""
    context = cli_context()
    skipped: list[dict[str, Any]] = []
    out, partial, target, spooled_to = _open_results(output, on_error)
    kept = _earlier_results(target)
    count = 0
    done = False
    try:
        with RunProgress(_label(tf, name), Path(source), err, enabled=progress) as shown:
            for chunk, rows in _chunks(tf, reader, source, name, batch_size, on_error, skipped):
                results = _run_chunk(tf, chunk, rows, context, on_error, skipped)
                for result in results:
                    out.write(result.model_dump_json() + "\n")
                count += len(results)
                shown.update(count)
                check_stopped()
        if spooled_to is not None:
            out.seek(0)
            shutil.copyfileobj(out, spooled_to)
            spooled_to.flush()
        done = True
    except Stopped as stop:
        stop.detail = (f"the results so far are in {output or 'standard output'}, whole lines"
                       if partial is None and spooled_to is None
                       else f"{count} item(s) processed, nothing was written")
        stop.detail += "; run the command again to process the input."
        raise
    finally:
        if output or spooled_to is not None:
            out.close()
        if spooled_to is not None and output:
            spooled_to.close()
        if partial:
            if done and count:  # no result at all: the output stays as it was (absent, or the earlier results)
                os.replace(partial, target)  # type: ignore[arg-type]
            else:
                partial.unlink(missing_ok=True)
    for problem in skipped:
        err.print(f"[yellow]skipped row {problem['row']}[/]: {escape(problem_text(problem))}")
    err.print(f"{count} item(s) processed, {len({p['row'] for p in skipped})} row(s) skipped.")
    if count == 0:
        _say_nothing_processed(name, bool(skipped), output, kept)
        return 1
    return 0


def _say_nothing_processed(name: str, skipped: bool, output: Optional[Path], kept: Optional[int]) -> None:
    """The error of a run that processed no item (exit 1 whether or not ``--output`` existed: an empty export is
    most likely a failed one, and a scheduled job must not take an old results file for today's)."""
    if kept is not None:
        left = f"; --output {output} was left as it was ({kept:,} bytes of earlier results)"
    elif output is not None:
        left = f"; --output {output} was not written"
    else:
        left = ""
    err.print(f"[red]error[/]: {escape(_nothing_processed(name, skipped) + left)}. Check the input file.")


def _earlier_results(target: Optional[Path]) -> Optional[int]:
    """The size of the non-empty file at ``target`` (a run's final ``--output``), or ``None``: a run that processes
    no item (an empty or header-only input, every row skipped) leaves such a file as it is instead of emptying it."""
    try:
        size = target.stat().st_size if target is not None and target.is_file() else 0
    except OSError:
        return None
    return size or None


def _nothing_processed(name: str, skipped: bool) -> str:
    """Why a run processed no item: every row skipped, or none to read."""
    return (f"every row of {name} was skipped; nothing was processed" if skipped
            else f"no rows in {name} (the file is empty or has only a header); nothing was processed")


def _run_file_with_state(tf: Taskflow, reader: Any, source: str, output: Optional[Path], checkpoint_rows: int,
                         on_error: OnError, name: str, state: str, tenant: str, discard_unfinished: bool,
                         progress: bool = True, already_seen: AlreadySeen = AlreadySeen.skip,
                         ids_by_row: bool = False) -> int:
    """:func:`_run_file` with the state kept in a store, checkpointed after each chunk (:mod:`sectorflow.cli_state`).
    Items an earlier run fed into the state (:class:`~sectorflow.cli_state.FedItems`) are skipped, or with
    ``AlreadySeen.refuse`` the input is refused before anything runs."""
    from .cli_state import FedItems, prepare, run_with_state

    kept = _earlier_results(output.resolve() if output is not None else None)
    keeper, run, _ = prepare(tf, state, tenant, source, name, output, discard_unfinished)
    started = keeper.store.run(keeper.task, tenant)
    fed = FedItems(keeper, tf._current[0], started.start_seq if started is not None else 0, ids_by_row)
    seen = fed.seen
    if already_seen is AlreadySeen.refuse:
        _refuse_already_seen(tf, reader, source, name, seen, keeper, discard=run is None)
    if run is not None:
        err.print(f"resuming the unfinished run of {escape(name)} from row {run.rows_done + 1} (last commit "
                  f"{run.time}); {run.items} item(s) already done.")
    skipped: list[dict[str, Any]] = []
    already: list[int] = []  # rows of items an earlier run fed: not run again
    once = on_error is OnError.reject and output is not None  # else checked before (stdout) or skip mode
    numbers: list[int] = []

    def run_chunk(chunk: list[Any], context: CallContext) -> tuple[list[Any], list[Any]]:
        rows = numbers[:len(chunk)]
        del numbers[:len(chunk)]
        drop = set(seen(chunk))
        if drop:
            already.extend(rows[i] for i in sorted(drop))
            keep = [i for i in range(len(chunk)) if i not in drop]
            chunk, rows = [chunk[i] for i in keep], [rows[i] for i in keep]
        return _run_kept(tf, chunk, rows, context, on_error, skipped)

    refusals = _refusals(tf)

    def unrun(chunk: list[Any]) -> None:  # rejected: a chunk read but not run; what the task refuses of it is listed
        skipped.extend(_refused_rows(refusals, chunk, numbers[:len(chunk)]))

    try:
        with RunProgress(_label(tf, name), Path(source), err, enabled=progress) as shown:
            count = run_with_state(
                keeper, run, reader(source, name=name),
                lambda rows: _validated(tf.spec, rows, OnError.reject if once else OnError.skip, skipped,
                                        tf.input_context, numbers, refusals if once else None), output,
                checkpoint_rows, cli_context(), _utf8_stdout, lambda n: (shown.update(n), check_stopped()),
                rejected=lambda: once and bool(skipped), run_chunk=run_chunk, unrun=unrun, fed=fed)
    except Stopped as stop:
        progress_now = keeper.store.run(keeper.task, tenant)
        rows = progress_now.rows_done if progress_now is not None else 0
        stop.detail = (f"the state in {keeper.store.url} (tenant {tenant}) is at its last checkpoint (row {rows}); "
                       "run the same command again to continue from there.")
        raise
    if count is None:  # a bad row in reject mode: the run is discarded, the state put back where it started
        from .cli_state import PARTIAL_SUFFIX

        with keeper.store.transaction():
            keeper.store.discard_run(keeper.task, keeper.tenant)
        target = output.resolve()  # type: ignore[union-attr]
        target.with_name(f".{target.name}{PARTIAL_SUFFIX}").unlink(missing_ok=True)
        raise _rejected(skipped, name)
    for problem in skipped:
        err.print(f"[yellow]skipped row {problem['row']}[/]: {escape(problem_text(problem))}")
    nothing = count == 0 and (run is None or run.output_offset == 0)  # no result at all: the run was discarded
    if already:
        err.print(f"[yellow]{len(already):,} item(s) already in the state skipped[/] (first: row {already[0]}): an "
                  f"earlier run fed them into {escape(keeper.store.url)} (tenant {escape(tenant)}; same "
                  f"{escape(_what_identifies(tf))}), so they are not run or written again (--already-seen refuse "
                  "makes such an input an error).")
    err.print(f"{count} item(s) processed, {len({p['row'] for p in skipped})} row(s) skipped"
              + (f", {len(already):,} already in the state" if already else "") + "; state "
              f"{'unchanged in' if nothing else 'saved to'} {escape(keeper.store.url)} (tenant {escape(tenant)}).")
    if nothing:
        if already and not skipped:
            err.print(f"[red]error[/]: every item of {escape(name)} is already in the state; nothing was processed"
                      + (f"; --output {escape(str(output))} was not written" if output is not None and kept is None
                         else f"; --output {escape(str(output))} was left as it was" if output is not None else "")
                      + ". Give the next input.")
            return 1
        _say_nothing_processed(name, bool(skipped), output, kept)
        return 1
    return 0


def _what_identifies(tf: Taskflow) -> str:
    """How the task identifies an item across inputs, for messages (aml: its pipeline's ``item_keys`` docstring's
    short form)."""
    return getattr(tf._current[0], "ITEM_KEY_TEXT", None) or (", ".join(tf.spec.id_fields) or "key")


def _refuse_already_seen(tf: Taskflow, reader: Any, source: str, name: str, seen: Any, keeper: Any,
                         discard: bool) -> None:
    """``--already-seen refuse``: read the input once, before anything runs, and refuse it when an item of it is
    already in the state (the run just begun is discarded when ``discard``).

    Raises:
        InvalidInputError: listing the rows (and the count).
    """
    rows: list[int] = []
    numbers: list[int] = []
    items = _validated(tf.spec, reader(source, name=name), OnError.skip, [], tf.input_context, numbers)
    while chunk := list(itertools.islice(items, CHUNK_ITEMS)):
        rows.extend(numbers[i] for i in seen(chunk))
        del numbers[:len(chunk)]
    if not rows:
        return
    if discard:
        with keeper.store.transaction():
            keeper.store.discard_run(keeper.task, keeper.tenant)
    what = _what_identifies(tf)
    raise InvalidInputError(
        f"{len(rows):,} item(s) of {name} (first: row {rows[0]}) are already in the state {keeper.store.url} (tenant "
        f"{keeper.tenant!r}; same {what}): an earlier run fed them, and --already-seen refuse was given; nothing was "
        "run. Leave them out of the input, or drop --already-seen refuse to skip them.",
        details=[{"row": row, "field": None, "reason": "already in the state"} for row in rows])


def _label(tf: Taskflow, name: str) -> str:
    """What the progress shows the run as: the task and the input's file name."""
    return f"{tf.spec.name} {Path(name).name if name != 'standard input' else name}"


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


def problem_text(problem: dict[str, Any]) -> str:
    """One bad row's problem as a line: ``field: reason`` (or the reason alone)."""
    field = problem.get("field")
    return f"{field}: {problem.get('reason')}" if field else str(problem.get("reason"))
