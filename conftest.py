"""Session-wide test setup for every suite (``tests/`` and ``plugins/*/tests``).

Every test runs with a temporary ``SECTORFLOW_HOME``, made for the session and removed after it, so nothing a test
runs writes outside it: the audit log is on by default and, with nothing configured, creates its embedded store and
key file under ``SECTORFLOW_HOME`` (``docs/compliance.md``). Child processes (CLI runs, servers) inherit it. Tests that
need a home of their own set it with ``monkeypatch``. The embedded log's commits use ``synchronous=NORMAL`` here (a
committed record survives a killed process, not a power cut): the suite's calls would otherwise each wait for two
fsyncs; the tests of ``FULL`` set it themselves.

Parallel runs (``scripts/test.sh`` runs pytest-xdist's ``-n 2 --dist loadfile``; docs/install.md, "Running the
tests"): each worker is a process of its own, with its own ``SECTORFLOW_HOME``. Every test module is one unit of
work, run whole by one worker (its module- and session-scoped fixtures are made once); the modules a conftest names
in ``XDIST_GROUPS = {group: [file names]}`` form one unit (they never run beside each other) and are handed out first.
A test marked ``exclusive`` runs while no other test of the run does (the other workers wait between tests): for a
test that changes what every test sees, such as installing a plugin into the shared virtualenv.
"""

from __future__ import annotations

import ast
import fcntl
import functools
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

TEST_HOME_PREFIX = "sectorflow-test-home-"
# Modules that take the lock of the one PostgreSQL state store the tests share (SECTORFLOW_TEST_POSTGRES_DSN's default
# schema: sectorflow.state_lock_pg): beside each other a run would find another's server or run holding it.
XDIST_GROUPS = {"postgres-state": ["tests/test_state_lock_pg.py", "tests/serving/test_replicas.py",
                                   "plugins/aml/tests/test_serve_state_lock.py"]}


@pytest.fixture(scope="session", autouse=True)
def temporary_sectorflow_home() -> Iterator[str]:
    home = tempfile.mkdtemp(prefix=TEST_HOME_PREFIX)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SECTORFLOW_HOME", home)
        mp.setenv("SECTORFLOW_AUDIT_SQLITE_SYNCHRONOUS", os.environ.get("SECTORFLOW_AUDIT_SQLITE_SYNCHRONOUS", "NORMAL"))
        yield home
    try:
        from sectorflow.compliance import runtime

        runtime.reset()  # close the embedded log before its folder goes
    except ImportError:  # pragma: no cover - a core-only install
        pass
    shutil.rmtree(home, ignore_errors=True)


# --- parallel runs (pytest-xdist) ----------------------------------------------------------------------------------
# pytest-xdist's own `--dist loadgroup` does not group on pytest 9.2 (it renames node ids, which pytest 9.2 no longer
# reads: pytest-dev/pytest-xdist#1386), so the groups are the scheduler's, from XDIST_GROUPS in conftest files.


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "exclusive: run while no other test of a parallel run runs (a test that "
                                       "changes what every test sees, e.g. the installed plugins)")


@functools.cache
def _groups_declared_in(folder: Path) -> dict[str, str]:
    """``{file name: group}`` from ``XDIST_GROUPS = {group: [test module file names]}`` in ``folder/conftest.py``
    (a literal, read without importing the conftest: the controller of a parallel run does not load every conftest)."""
    conftest = folder / "conftest.py"
    if not conftest.is_file():
        return {}
    for node in ast.parse(conftest.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "XDIST_GROUPS" for t in node.targets):
            return {name: str(group) for group, names in ast.literal_eval(node.value).items() for name in names}
    return {}


def _group_of(rootpath: Path, module: str) -> str | None:
    """The group a conftest in the module's folder or above declares for ``module`` (a path relative to the
    rootdir), or ``None``."""
    path = rootpath / module
    for folder in path.parents:
        group = _groups_declared_in(folder).get(path.relative_to(folder).as_posix())
        if group is not None or folder == rootpath:
            return group
    return None


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own choice by --dist; optional: `-p no:xdist`
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadfile`` (scripts/test.sh): one unit of work per test module, run whole by one worker (its module-
    and session-scoped fixtures are made once), except that the modules of a group declared in a conftest's
    ``XDIST_GROUPS`` form one unit (run one after another, never beside each other); groups are handed out first,
    since they hold the longest runs. Any other ``--dist`` is xdist's own."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class GroupedFileScheduling(LoadFileScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            group = _group_of(config.rootpath, module)
            return module if group is None else f"group:{group}"

        def _assign_work_unit(self, node: object) -> None:
            if not self.ordered:  # the first assignment: the work queue is complete, groups go to its front
                self.ordered = True
                for scope in [s for s in self.workqueue if s.startswith("group:")][::-1]:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return GroupedFileScheduling(config, log)


class _RunLock:
    """A readers-writer lock shared by the workers of one run (two ``flock`` files beside the workers' temporary
    folders): every test holds it shared, an ``exclusive`` test holds it alone. The turnstile keeps a waiting
    exclusive test from being overtaken by the other workers' next tests."""

    def __init__(self, folder: Path) -> None:
        self.turnstile = os.open(folder / "sectorflow-tests.turnstile", os.O_RDWR | os.O_CREAT, 0o600)
        self.room = os.open(folder / "sectorflow-tests.room", os.O_RDWR | os.O_CREAT, 0o600)

    @contextmanager
    def held(self, exclusive: bool) -> Iterator[None]:
        if exclusive:
            fcntl.flock(self.turnstile, fcntl.LOCK_EX)
            fcntl.flock(self.room, fcntl.LOCK_EX)
        else:
            fcntl.flock(self.turnstile, fcntl.LOCK_SH)
            fcntl.flock(self.room, fcntl.LOCK_SH)
            fcntl.flock(self.turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self.room, fcntl.LOCK_UN)
            if exclusive:
                fcntl.flock(self.turnstile, fcntl.LOCK_UN)


_run_lock: _RunLock | None = None


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outermost: a test's timeout starts once it holds the lock
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    global _run_lock
    workerinput = getattr(item.config, "workerinput", None)  # set in pytest-xdist's workers only
    if workerinput is None:
        yield
        return
    if _run_lock is None:  # local workers' basetemps are <the run's basetemp>/popen-gw0, /popen-gw1, ...
        basetemp = item.config.option.basetemp
        run = f"sectorflow-tests-{workerinput['testrunuid']}"
        folder = Path(basetemp).parent if basetemp else Path(tempfile.gettempdir()) / run
        folder.mkdir(parents=True, exist_ok=True)
        _run_lock = _RunLock(folder)
    with _run_lock.held(exclusive=item.get_closest_marker("exclusive") is not None):
        yield
