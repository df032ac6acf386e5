"""What ``sectorflow federate`` does around a run: checks before Flower starts, progress per round, the cost of
differential privacy measured against the same run without it, the bundle at the end, and Ctrl-C.

- :func:`preflight`: every ``[[institutions]]`` entry through its trainable's ``check`` (files exist, labels read),
  in this process, before Ray or Flower start: a wrong path is reported at once, naming the institution.
- :class:`RoundProgress`: one line per round (``round 3/8: validation average_precision 0.9012 (3 institutions, 0
  failures, 4.2 s)``); a Rich progress bar with the same lines when stderr is a terminal, plain lines otherwise.
- :func:`compare_without_dp`: the same federation with ``dp.mode = "off"`` (same seed, same SecAgg+ setting); the
  report's ``privacy_utility`` holds both runs' metric per round and the final cost, with ``warning`` set when the
  cost exceeds ``dp.utility_margin``.
- :func:`run_record`: the federation's record for the bundle's manifest (rounds, strategy, SecAgg+/DP settings, the
  budget spent, each institution's data digest and example count, the audit event ids, which round's model is kept
  and why (``selection``), that round's summed ``count.*`` metrics as ``counts``; never an institution's path).
- :func:`stop_on_sigint`: Ctrl-C records ``training_run_failed`` (``aborted``), stops Ray and every process the run
  started, and exits with 130 within seconds.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from sectorflow import ConfigError, SectorflowError, TrainableSpec

from .client import partition_for
from .config import FederationConfig
from .strategy import COUNT_PREFIX, RoundRecord, RunReport, lower_is_better, metric_of


def preflight(cfg: FederationConfig, spec: TrainableSpec) -> None:
    """Take the institutions' relative file paths relative to the federation.toml's folder
    (:func:`~sectorflow.federated.config.resolve_paths`), check every configured institution's keys against those
    the trainable declares (:func:`~sectorflow.federated.registry.check_partition_keys`), then run its ``check`` on
    each (when it offers one).

    Raises:
        ConfigError: naming the first institution with an unknown key (the key, the closest accepted one, all
            accepted ones) or whose partition fails, with the trainable's message.
    """
    from .config import resolve_paths
    from .registry import check_partition_keys

    resolve_paths(cfg, spec.path_keys)  # relative to the federation.toml's folder (load_config)
    for index, institution in enumerate(cfg.institutions):
        check_partition_keys(spec, institution, f"institution {index + 1} of {len(cfg.institutions)} in the "
                                                "federation config (an institutions table)")
    if spec.check is None:
        return
    for index in range(len(cfg.institutions)):
        try:
            spec.check(dict(partition_for({"partition-id": index}, cfg)))
        except (SectorflowError, OSError, ValueError) as exc:
            # no square brackets in the message: the CLI prints errors as Rich markup
            settings = ", ".join(f"{k}={v!r}" for k, v in cfg.institutions[index].items())
            raise ConfigError(f"Institution {index + 1} of {len(cfg.institutions)} in the federation config "
                              f"({settings}) cannot be used by {spec.task}/{spec.name}: {exc}") from exc


class RoundProgress:
    """Per-round progress on ``stream`` (stderr): Rich bar when it is a terminal, plain lines otherwise.

    Use as a context manager; call with each :class:`RoundRecord` (``on_round``)."""

    def __init__(self, cfg: FederationConfig, label: str = "", stream: TextIO | None = None) -> None:
        self.cfg, self.label, self.stream = cfg, label, stream or sys.stderr
        self.progress: Any = None
        self.task: Any = None

    def __enter__(self) -> RoundProgress:
        if self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), console=Console(file=self.stream), transient=False)
            self.progress.start()
            self.task = self.progress.add_task(f"federated rounds{self.label}", total=self.cfg.rounds)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None:
            self.progress.stop()

    def say(self, line: str) -> None:
        """Print one line (above the bar on a terminal)."""
        if self.progress is not None:
            self.progress.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            print(line, file=self.stream, flush=True)

    def __call__(self, record: RoundRecord) -> None:
        metric = metric_of(self.cfg, record)
        value = record.eval_metrics.get(metric) if metric else None
        shown = f"validation {metric} {float(value):.4f}" if value is not None else "no evaluation"
        self.say(f"round {record.round}/{self.cfg.rounds}{self.label}: {shown} ({len(record.participants)} "
                 f"institutions, {record.failures} failures, {record.seconds:.1f} s)")
        if self.progress is not None:
            self.progress.advance(self.task)


def per_round(report: RunReport, metric: str | None) -> list[float | None]:
    """The metric of each round of ``report`` (``None`` where a round was not evaluated)."""
    return [float(r.eval_metrics[metric]) if metric and metric in r.eval_metrics else None for r in report.rounds]


def kept_value(report: RunReport, metric: str | None) -> float | None:
    """The metric of the model ``report`` keeps (its :attr:`~RunReport.selection`), else of its last evaluated
    round."""
    sel = report.selection
    if sel is not None and sel.get("metric") == metric and sel.get("value") is not None:
        return float(sel["value"])
    return next((v for v in reversed(per_round(report, metric)) if v is not None), None)


def privacy_utility(cfg: FederationConfig, with_dp: RunReport, without: RunReport) -> dict[str, Any]:
    """Both runs' metric per round and the cost of DP on the models the runs keep (``keep``: the best or the last
    round's; ``without - with``, or ``with - without`` for a metric where lower is better,
    :data:`~sectorflow.federated.strategy.LOWER_IS_BETTER`); ``warning`` when the cost exceeds
    ``cfg.dp.utility_margin``."""
    metric = metric_of(cfg, with_dp.rounds[-1]) if with_dp.rounds else None
    a, b = per_round(with_dp, metric), per_round(without, metric)
    final_a, final_b = kept_value(with_dp, metric), kept_value(without, metric)
    out: dict[str, Any] = {"metric": metric, "with_dp": a, "without_dp": b, "final_with_dp": final_a,
                           "final_without_dp": final_b, "kept_rounds": [
                               (r.selection or {}).get("round") for r in (with_dp, without)],
                           "margin": cfg.dp.utility_margin, "baseline_run_id": without.run_id, "warning": None}
    if final_a is not None and final_b is not None:
        cost = final_a - final_b if lower_is_better(metric) else final_b - final_a
        out["cost"] = round(cost, 4)
        if cost > cfg.dp.utility_margin:
            out["warning"] = (f"differential privacy ({cfg.dp.mode}, {_dp_settings(cfg)}) costs {cost:.4f} "
                              f"{metric}: {final_a:.4f} with it, {final_b:.4f} without, more than the margin "
                              f"{cfg.dp.utility_margin} (dp.utility_margin). See docs/federated.md for a setting "
                              "that keeps utility and what it gives up.")
    return out


def _dp_settings(cfg: FederationConfig) -> str:
    dp = cfg.dp
    if dp.mode == "local":
        return f"epsilon {dp.epsilon} per round over {cfg.rounds} rounds, clipping_norm {dp.clipping_norm}"
    return f"noise_multiplier {dp.noise_multiplier}, clipping_norm {dp.clipping_norm}"


def without_dp(cfg: FederationConfig) -> FederationConfig:
    """The same federation with DP off (the comparison run)."""
    return cfg.model_copy(update={"dp": cfg.dp.model_copy(update={"mode": "off"})})


def run_record(cfg: FederationConfig, report: RunReport, command: str = "") -> dict[str, Any]:
    """The federation's record for a bundle's manifest (``provenance.federation``); institutions' data paths are
    left out (they stay with each institution)."""
    summary = report.summary()
    settings = cfg.model_dump(mode="json", exclude={"institutions", "bundle"})
    record: dict[str, Any] = {
        "run_id": report.run_id, "engine": "simulation" if cfg.institutions else "deployment",
        "rounds": summary["rounds"], "rounds_configured": cfg.rounds, "strategy": settings["strategy"],
        "secagg": settings["secagg"], "dp": settings["dp"], "privacy_budget": report.privacy,
        "privacy_utility": report.privacy_utility, "institutions": summary["institutions"],
        "audit_event_ids": summary["audit_event_ids"], "model_sha256": report.model_sha256,
        "local_epochs": cfg.local_epochs, "lr": cfg.lr, "batch_size": cfg.batch_size, "seed": cfg.seed,
        "model": report.model, "command": command or f"sectorflow federate {cfg.task}",
        "selection": report.selection, "keep": cfg.keep}
    evaluated = [r for r in report.rounds if r.eval_metrics]
    chosen = (report.selection or {}).get("round")
    evaluated = [r for r in evaluated if r.round == chosen] or evaluated
    if evaluated:  # the summed ``count.*`` metrics of the kept round (e.g. calibration histograms)
        record["counts"] = {k: v for k, v in evaluated[-1].eval_metrics.items() if k.startswith(COUNT_PREFIX)}
    lookbacks = {float(p["lookback_days"]) for p in cfg.institutions if "lookback_days" in p}
    if len(lookbacks) == 1:
        record["lookback_days"] = lookbacks.pop()
    return record


def export_bundle(cfg: FederationConfig, spec: TrainableSpec, report: RunReport, out: Any, command: str = "") -> Any:
    """Write the run's bundle through the trainable's ``export``; returns the manifest path.

    Raises:
        ConfigError: the trainable offers no export, or the run produced no global model.
    """
    from pathlib import Path

    if spec.export is None:
        raise ConfigError(f"{spec.task}/{spec.name} offers no bundle export: drop --out / bundle (its weights can "
                          "still be written with --weights).")
    kept = report.kept_weights()
    if kept is None:
        raise ConfigError(f"Run {report.run_id} produced no global model: no bundle written.")
    return spec.export(list(kept), run_record(cfg, report, command), Path(out))


class Current:
    """The run a Ctrl-C would abort (the DP run, then its comparison run)."""

    def __init__(self) -> None:
        self.cfg: FederationConfig | None = None
        self.report: RunReport | None = None
        self.plugin = ""


def _shutdown_ray(timeout: float) -> None:
    def stop() -> None:
        try:
            import ray

            if ray.is_initialized():
                ray.shutdown()
        except Exception:  # noqa: BLE001 - best effort on the way out
            pass

    worker = threading.Thread(target=stop, daemon=True)
    worker.start()
    worker.join(timeout)


def descendants() -> list:
    """This process's running descendants now (psutil.Process objects; empty when psutil cannot tell)."""
    import psutil

    try:
        return psutil.Process().children(recursive=True)
    except psutil.Error:
        return []


RAY_BINARIES = frozenset({"raylet", "gcs_server"})


def ray_processes_in_group() -> list:
    """The Ray processes of this process group started after this process (psutil.Process objects): those whose
    name is Ray's ``raylet``/``gcs_server``, whose command line runs a file of the imported ``ray`` package
    (dashboard, agents, log monitor) or that renamed themselves ``ray::...`` (workers). Empty when this process has
    not imported Ray or psutil cannot tell.

    A Ray process whose parent has exited is re-parented (to init or a subreaper) and is no longer this process's
    descendant, and one can be started (a raylet prestarting a worker) after any earlier listing, so descendants alone
    miss some; Ray starts them in the caller's process group (it blocks SIGINT in them: a terminal's Ctrl-C reaches
    only this process), and another program's Ray processes are in another group."""
    ray = sys.modules.get("ray")
    if ray is None or not getattr(ray, "__file__", None):
        return []
    import psutil

    root = os.path.dirname(ray.__file__)
    try:
        me = psutil.Process()
        group, born = os.getpgrp(), me.create_time()
    except (OSError, psutil.Error):
        return []
    out = []
    for process in psutil.process_iter(["name", "cmdline", "create_time"]):
        try:
            if process.pid == me.pid or process.info["create_time"] < born or os.getpgid(process.pid) != group:
                continue
            command = process.info["cmdline"] or []
            if (process.info["name"] in RAY_BINARIES or (command and command[0].startswith("ray::"))
                    or any(root in part for part in command)):
                out.append(process)
        except (OSError, psutil.Error):
            continue
    return out


def _alive(processes: list) -> list:
    """Those of ``processes`` still running: the same process (pid and start time) and not a zombie."""
    import psutil

    out = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                out.append(process)
        except psutil.Error:
            continue
    return out


def _wait_gone(processes: list, timeout: float) -> list:
    """Wait up to ``timeout`` s until none of ``processes`` runs (an exited process whose new parent has not reaped it
    yet, a zombie, counts as gone); returns those still running."""
    import time

    deadline = time.monotonic() + timeout
    alive = _alive(processes)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = _alive(alive)
    return alive


def stop_child_processes(grace: float = 3.0, known: list | tuple = ()) -> int:
    """Stop every process this one started, and theirs (Ray's ``gcs_server``, raylets, workers, log monitor ...),
    together with ``known`` (descendants listed earlier) and this run's Ray processes in its process group
    (:func:`ray_processes_in_group`): SIGTERM, then SIGKILL to those still running after
    ``grace`` seconds (``grace = 0``: SIGKILL at once); returns once none runs (at most ``grace`` + 3 s). Returns how
    many there were.

    ``ray.shutdown()`` from a Ctrl-C handler does not always get to them: the main thread is interrupted inside
    Flower's simulation loop, and Ray's head processes (started by this process) kept running after it exited.
    ``known`` matters because a worker whose raylet ``ray.shutdown()`` stopped is re-parented (to init): it is no
    longer this process's descendant, and it may take seconds to notice and exit, after this process has gone."""
    children = list(dict.fromkeys([*known, *descendants(), *ray_processes_in_group()]))  # by pid and start time
    alive = _alive(children)
    if grace > 0:
        for child in alive:
            try:
                child.terminate()
            except Exception:  # noqa: BLE001 - psutil.Error: gone meanwhile
                pass
        alive = _wait_gone(alive, grace)
    for child in alive:
        try:
            child.kill()
        except Exception:  # noqa: BLE001 - psutil.Error: gone meanwhile
            pass
    _wait_gone(alive, 3.0)
    late = [p for p in _alive([*descendants(), *ray_processes_in_group()]) if p not in children]
    for child in late:  # started while the others were being stopped (a worker a dying raylet had begun)
        try:
            child.kill()
        except Exception:  # noqa: BLE001 - psutil.Error: gone meanwhile
            pass
    _wait_gone(late, 3.0)
    return len(children) + len(late)


@contextmanager
def stop_on_sigint(current: Current, say: Callable[[str], None], ray_timeout: float = 5.0,
                   exit: Callable[[int], Any] = os._exit) -> Iterator[None]:
    """While active, Ctrl-C (SIGINT) records the abort of ``current``'s run (``training_run_failed``, ``aborted``),
    says so, stops Ray (``ray.shutdown()``, at most ``ray_timeout`` s, then :func:`stop_child_processes`: no Ray
    process of the run is left) and exits with 130; a second Ctrl-C exits at once."""
    from .server import record_abort

    state: dict[str, Any] = {"stopping": False, "known": []}

    def handler(signum: int, frame: Any) -> None:
        if state["stopping"]:  # the second Ctrl-C: no waiting, but no Ray process left behind either
            stop_child_processes(grace=0.0, known=state["known"])
            exit(130)
            return
        state["stopping"] = True
        state["known"] = [*descendants(), *ray_processes_in_group()]  # before ray.shutdown() re-parents some
        report, cfg = current.report, current.cfg
        say("Ctrl-C: stopping the federated run (press Ctrl-C again to quit at once) ...")
        if report is not None and cfg is not None:
            try:
                written = record_abort(cfg, report, current.plugin)
                say(f"run {report.run_id} aborted after {len(report.rounds)} of {cfg.rounds} rounds"
                    + ("; the audit log records it (task.training_run_failed, aborted)" if written else ""))
            except Exception as exc:  # noqa: BLE001 - a regulated log that cannot write: say so, still stop
                say(f"run {report.run_id} aborted, but its abort could not be recorded: {type(exc).__name__}: {exc}")
        _shutdown_ray(ray_timeout)
        stopped = stop_child_processes(known=state["known"])
        say(f"Ray stopped ({stopped} processes of the run ended); exit 130")
        sys.stdout.flush()
        sys.stderr.flush()
        exit(130)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
