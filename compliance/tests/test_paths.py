"""Bad audit paths (issue 23, item 1): a store or key path whose folder cannot be created or written is a typed
error naming the path and the fix; unregulated tasks carry on with one warning, regulated tasks fail closed. Also
``audit keygen``, ``aml explain --png`` and ``federate --report/--weights``. The permission cases run in a child
process as user ``nobody`` (root passes every permission check)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from audit_support import ScorePipeline
from sectorflow import ConfigError, PathNotWritableError, Taskflow, cli, writable_file
from sectorflow.compliance import AuditConfigError, AuditKeyError, runtime
from sectorflow.compliance import plugin as audit_plugin

TXNS = [{"customer_id": "c-100", "amount": 5.0}]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    if not any(g.name == "audit" for g in cli.app.registered_groups):
        audit_plugin.sectorflow_register_commands(app=cli.app)
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.fixture
def blocker(tmp_path: Path) -> Path:
    """A plain file where a folder is expected."""
    path = tmp_path / "not-a-folder"
    path.write_text("x")
    return path


def test_a_store_under_a_file_warns_once_for_unregulated_tasks_and_fails_regulated_ones(
        audited: Any, blocker: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = blocker / "audit" / "audit.db"
    with pytest.raises(AuditConfigError) as caught:
        audited(SECTORFLOW_AUDIT_DB=str(db), SECTORFLOW_AUDIT_REGULATED="score")
    message = str(caught.value)
    assert str(db) in message and "a parent is a file" in message and str(blocker) in message
    assert "SECTORFLOW_AUDIT_DB" in message  # the fix names the setting
    assert isinstance(caught.value.__cause__, PathNotWritableError)
    with caplog.at_level("WARNING", logger="sectorflow.audit"):
        plain = Taskflow("plain")
        assert [o.score for o in plain(TXNS)] == [10.0]
        assert [o.score for o in plain(TXNS)] == [10.0]
    warnings = [r for r in caplog.records if r.name == "sectorflow.audit" and r.levelname in ("WARNING", "ERROR")]
    assert len(warnings) == 1 and "cannot be opened" in warnings[0].getMessage()
    assert str(db) in warnings[0].getMessage() and not warnings[0].exc_info  # one line, no traceback
    assert runtime.failures["lost"] >= 4  # loads and calls: counted, not silent
    ScorePipeline.probe = lambda: "ran"
    with pytest.raises(AuditConfigError, match="a parent is a file"):
        Taskflow("score")(TXNS)
    assert ScorePipeline.observed == []
    assert not db.parent.exists()


def test_a_missing_store_folder_is_created(audited: Any, tmp_path: Path) -> None:
    db = tmp_path / "a" / "b" / "c" / "audit.db"
    lg = audited(SECTORFLOW_AUDIT_DB=str(db))
    Taskflow("score")(TXNS)
    assert db.is_file() and db.stat().st_mode & 0o777 == 0o600 and lg.store.size() >= 4


def test_a_store_path_that_is_a_folder_is_refused(audited: Any, tmp_path: Path) -> None:
    with pytest.raises(AuditConfigError, match="it is a folder"):
        audited(SECTORFLOW_AUDIT_DB=str(tmp_path))


def test_keygen_under_a_file_is_an_error_not_a_traceback(blocker: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["audit", "keygen", str(blocker / "keys" / "audit-key.json")], capsys)
    assert code == 2 and "a parent is a file" in out and "Traceback" not in out
    assert "Cannot write the audit key file" in out
    with pytest.raises(AuditKeyError, match="a parent is a file"):
        from sectorflow.compliance import generate_key_file

        generate_key_file(blocker / "k.json")


def test_aml_explain_png_under_a_file_is_an_error(blocker: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    aml_plugin = pytest.importorskip("sectorflow_aml.plugin")
    if not any(g.name == "aml" for g in cli.app.registered_groups):  # another test may have loaded commands first
        aml_plugin.sectorflow_register_commands(app=cli.app)
    code, out = run(["aml", "explain", "A1", "--results", str(tmp_path / "r.jsonl"), "--input",
                     str(tmp_path / "t.csv"), "--png", str(blocker / "alert.png")], capsys)
    assert code == 2 and "Cannot write the PNG file" in out and "--png" in out and "a parent is a file" in out


def test_federate_report_weights_and_out_under_a_file_are_errors_before_the_run(blocker: Path, tmp_path: Path) -> None:
    pytest.importorskip("flwr")
    from typer.testing import CliRunner

    from sectorflow.federated.cli import federate_app

    config = tmp_path / "federation.toml"
    config.write_text('task = "aml"\nmodel = "account_mlp"\nrounds = 1\n[[institutions]]\nn = 8\n[[institutions]]\nn = 8\n')
    for flag in ("--report", "--weights", "--out"):
        result = CliRunner().invoke(federate_app, ["aml", "--config", str(config), flag, str(blocker / "out.x")])
        exc = result.exception
        if isinstance(exc, ConfigError) and "trains task" in str(exc):  # pragma: no cover - no aml plugin
            pytest.skip("the aml trainable is not installed")
        assert isinstance(exc, PathNotWritableError), result.output
        assert flag in str(exc) and "a parent is a file" in str(exc)


def test_writable_file_names_the_cause() -> None:
    with pytest.raises(PathNotWritableError, match="it is a folder"):
        writable_file(tempfile.gettempdir())
    with pytest.raises(PathNotWritableError, match="the folder does not exist"):
        writable_file(Path(tempfile.gettempdir()) / "sf-no-such-dir-xyz" / "f", create_parents=False)


_AS_NOBODY = r"""
import json, logging, os, sys, tempfile, shutil
from sectorflow import Taskflow, plugins
from sectorflow.compliance import AuditConfigError, generate_key_file, runtime
from sectorflow.compliance import plugin as audit_plugin
from audit_support import TinyPlugin

uid, gid, env = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
TXNS = [{"customer_id": "c-100", "amount": 5.0}]

def tasks():
    runtime.reset()
    plugins.reset()
    pm = plugins.get_plugin_manager()
    pm.register(audit_plugin, name="audit")
    pm.register(TinyPlugin(), name="tiny")

# Once as root in a folder of its own, so that every module the calls import lazily is loaded before the drop: the
# interpreter's files are where 'nobody' cannot read them.
warm = tempfile.mkdtemp(prefix="sf-perm-warm-")
os.environ.update({"SECTORFLOW_AUDIT_DB": f"{warm}/audit.db", "SECTORFLOW_AUDIT_KEY": f"{warm}/key.json",
                   "SECTORFLOW_HOME": warm})
generate_key_file(f"{warm}/key.json")
tasks()
Taskflow("plain")(TXNS)
Taskflow("score")(TXNS)
runtime.reset()
shutil.rmtree(warm)

os.setgroups([])
os.setgid(gid)
os.setuid(uid)
os.environ.update(env)
seen = []
handler = logging.Handler()
handler.emit = lambda record: seen.append(record.getMessage())
logging.getLogger("sectorflow.audit").addHandler(handler)
out = {"uid": os.geteuid()}
try:
    generate_key_file(env["KEYGEN_AT"])
    out["keygen"] = "ok"
except Exception as exc:
    out["keygen"] = f"{type(exc).__name__}: {exc}"
tasks()
out["plain"] = [o.score for o in Taskflow("plain")(TXNS)]
out["lost"] = runtime.failures["lost"]
try:
    Taskflow("score")(TXNS)
    out["score"] = "ran"
except AuditConfigError as exc:
    out["score"] = f"AuditConfigError: {exc}"
out["log"] = seen
print(json.dumps(out))
"""


def _as_nobody(uid: int, gid: int, env: dict[str, str]) -> dict[str, Any]:
    """Start a fresh interpreter as root that imports what it needs (and calls the tasks once in a folder of its own,
    loading every lazily imported module), drops to ``uid``/``gid`` with ``os.setuid``, tries keygen and two tasks
    (unregulated ``plain``, regulated ``score``), and prints what it saw. Not a fork of this process: a worker of a
    parallel run has other threads (Paddle's, Ray's), and a child forked from it can block forever on a lock one of
    them held; a fresh interpreter has none."""
    support = str(Path(__file__).parent)
    child_env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [support, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", _AS_NOBODY, str(uid), str(gid), json.dumps(env)], env=child_env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(os.name != "posix" or not hasattr(os, "setuid"), reason="POSIX users")
@pytest.mark.parametrize("case", ["read-only folder", "another user's folder"])
def test_no_permission_as_a_non_root_user(case: str, keyfile: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import pwd

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' on this machine")
    if os.geteuid() != 0:
        pytest.skip("needs root to start a child process as 'nobody'")
    monkeypatch.setenv("SECTORFLOW_LOAD_PLUGINS", "")
    work = Path(tempfile.mkdtemp(prefix="sf-perm-"))
    target = work / "target"
    try:
        os.chmod(work, 0o755)
        target.mkdir()
        if case == "read-only folder":  # nobody's own folder, mode 0555
            os.chown(target, nobody.pw_uid, nobody.pw_gid)
            os.chmod(target, 0o555)
        else:  # root's folder, mode 0700: nobody cannot even look inside
            os.chmod(target, 0o700)
        key = work / "key.json"
        shutil.copy(keyfile.path, key)
        os.chown(key, nobody.pw_uid, nobody.pw_gid)
        os.chmod(key, 0o600)
        env = {"SECTORFLOW_AUDIT_DB": str(target / "sub" / "audit.db"), "SECTORFLOW_AUDIT_KEY": str(key),
               "SECTORFLOW_AUDIT_REGULATED": "score", "KEYGEN_AT": str(target / "keys" / "k.json"),
               "SECTORFLOW_HOME": str(work / "home")}
        out = _as_nobody(nobody.pw_uid, nobody.pw_gid, env)
        assert "error" not in out, out
        assert out["uid"] == nobody.pw_uid
        assert out["plain"] == [10.0] and out["lost"] >= 2  # carried on, records counted as lost
        for what in ("keygen", "score"):
            assert "Cannot write the" in out[what] and str(target) in out[what], out[what]
            assert "permission denied" in out[what] and "nobody" in out[what], out[what]
        assert sum("cannot be opened" in m for m in out["log"]) == 1, out["log"]
        assert not (target / "sub").exists() and not (target / "keys").exists()
    finally:
        os.chmod(target, 0o755)
        shutil.rmtree(work)
        runtime.reset()
