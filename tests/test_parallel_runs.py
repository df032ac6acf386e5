"""The parallel test run (``scripts/test.sh``: pytest-xdist ``-n 2 --dist loadfile``) keeps what the root
``conftest.py`` promises: the modules a conftest names in ``XDIST_GROUPS`` run on one worker, each other module whole
on one worker, and an ``exclusive`` test runs while no other test does. Each check runs a real two-worker pytest on
small test files beside a copy of the root conftest (docs/install.md, "Running the tests")."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from core_support import PYTHON, REPO_ROOT, child_env

pytest.importorskip("xdist", reason="pytest-xdist is not installed (the test extra)")

RECORD = textwrap.dedent("""
    import json, os
    from pathlib import Path

    def record(name):
        with open(Path(__file__).parent / "ran.jsonl", "a") as out:
            out.write(json.dumps({"test": name, "worker": os.environ["PYTEST_XDIST_WORKER"]}) + "\\n")
""")


def run_two_workers(folder: Path, files: dict[str, str]) -> list[dict]:
    shutil.copy(REPO_ROOT / "conftest.py", folder / "conftest.py")
    (folder / "record_support.py").write_text(RECORD, encoding="utf-8")
    for name, body in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(body), encoding="utf-8")
    env = child_env(PYTEST_ADDOPTS=None, PYTEST_XDIST_WORKER=None, PYTEST_XDIST_TESTRUNUID=None,
                    PYTEST_XDIST_WORKER_COUNT=None, PYTHONPATH=str(folder))
    done = subprocess.run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile",
                           "--rootdir", str(folder), str(folder)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [json.loads(line) for line in (folder / "ran.jsonl").read_text().splitlines()]


def test_the_modules_of_a_declared_group_run_on_one_worker_and_each_module_whole_on_one(tmp_path):
    """Without the root conftest's scheduler, ``loadfile`` hands the group's two modules to the two workers."""
    one_module = """
        import pytest
        from record_support import record

        @pytest.mark.parametrize("i", range(4))
        def test_it(i):
            record(__name__)
    """
    ran = run_two_workers(tmp_path, {
        "sim/conftest.py": 'XDIST_GROUPS = {"ray": ["test_sim_a.py", "test_sim_b.py"]}\n',
        "sim/test_sim_a.py": one_module, "sim/test_sim_b.py": one_module,
        "test_other_a.py": one_module, "test_other_b.py": one_module})
    workers: dict[str, set[str]] = {}
    for row in ran:
        workers.setdefault(row["test"], set()).add(row["worker"])
    assert sorted(workers) == ["test_other_a", "test_other_b", "test_sim_a", "test_sim_b"]
    assert all(len(seen) == 1 for seen in workers.values()), workers
    assert workers["test_sim_a"] == workers["test_sim_b"], workers
    assert len(ran) == 16


def test_an_exclusive_test_never_runs_beside_another_test(tmp_path):
    """The other worker's test looks for the exclusive test's file for 8 s: while the lock holds, it is never there
    (without the lock both start at once and it is)."""
    ran = run_two_workers(tmp_path, {
        "test_alone.py": """
            import time
            from pathlib import Path

            import pytest
            from record_support import record

            @pytest.mark.exclusive
            def test_alone():
                flag = Path(__file__).parent / "exclusive-running"
                flag.touch()
                record("alone")
                time.sleep(2)
                flag.unlink()
        """,
        "test_beside.py": """
            import time
            from pathlib import Path
            from record_support import record

            def test_beside():
                flag = Path(__file__).parent / "exclusive-running"
                end = time.monotonic() + 8
                while time.monotonic() < end:
                    assert not flag.exists(), "the exclusive test ran beside this one"
                    time.sleep(0.05)
                record("beside")
        """})
    assert sorted(row["test"] for row in ran) == ["alone", "beside"]
    assert {row["worker"] for row in ran} == {"gw0", "gw1"}  # two workers, one after the other


def test_a_hanging_test_fails_with_its_stack_and_the_run_goes_on(tmp_path):
    """pyproject.toml's pytest-timeout settings (its method, a 3 s limit here instead of its 900 s): the hanging test
    fails with its stack, its worker is replaced and every other test still runs."""
    import tomllib

    options = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert options["timeout"] >= 600  # the longest module fixture (a Ray simulation) needs minutes
    shutil.copy(REPO_ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "record_support.py").write_text(RECORD, encoding="utf-8")
    (tmp_path / "test_hang.py").write_text(textwrap.dedent("""
        import threading

        def test_hangs():
            threading.Event().wait()  # forever
    """), encoding="utf-8")
    (tmp_path / "test_after.py").write_text(textwrap.dedent("""
        import pytest
        from record_support import record

        @pytest.mark.parametrize("i", range(6))
        def test_it(i):
            record(f"after-{i}")
    """), encoding="utf-8")
    env = child_env(PYTEST_ADDOPTS=None, PYTEST_XDIST_WORKER=None, PYTEST_XDIST_TESTRUNUID=None,
                    PYTEST_XDIST_WORKER_COUNT=None, PYTHONPATH=str(tmp_path))
    done = subprocess.run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile",
                           "-o", "timeout=3", "-o", f"timeout_method={options['timeout_method']}",
                           "--rootdir", str(tmp_path), str(tmp_path)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-3000:]
    assert "Timeout" in out and "test_hangs" in out and "threading.Event().wait()" in out, out[-3000:]
    assert "6 passed" in out and "1 failed" in out, out[-3000:]
    ran = [json.loads(line)["test"] for line in (tmp_path / "ran.jsonl").read_text().splitlines()]
    assert sorted(ran) == [f"after-{i}" for i in range(6)]
