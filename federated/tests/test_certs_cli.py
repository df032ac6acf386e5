"""`sectorflow federate certs` (CA, SuperLink certificate, SuperNode keys) and the command group."""

from __future__ import annotations

import ipaddress
import json
import stat
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from sectorflow import ConfigError

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sectorflow.federated.cli import federate_app  # noqa: E402

x509 = pytest.importorskip("cryptography.x509", reason="cryptography (compliance/federated extra) is missing")


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """sectorflow (test root)"""

    app.add_typer(federate_app, name="federate")
    return app


def test_certs_make_a_ca_a_server_certificate_it_signed_and_p384_openssh_keys(tmp_path):
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_ssh_private_key, load_ssh_public_key
    from cryptography.x509.oid import ExtendedKeyUsageOID

    result = CliRunner().invoke(_app(), ["federate", "certs", str(tmp_path), "--host", "127.0.0.1", "--host",
                                         "superlink.bank.example", "--supernode", "bank_a", "--supernode", "bank_b"])
    assert result.exit_code == 0, result.output
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.crt").read_bytes())
    server = x509.load_pem_x509_certificate((tmp_path / "server.pem").read_bytes())
    server.verify_directly_issued_by(ca)  # raises when the CA did not sign it
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert san.get_values_for_type(x509.DNSName) == ["superlink.bank.example"]
    assert ExtendedKeyUsageOID.SERVER_AUTH in server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    for name in ("bank_a", "bank_b"):
        private = load_ssh_private_key((tmp_path / "supernodes" / name).read_bytes(), password=None)
        public = load_ssh_public_key((tmp_path / "supernodes" / f"{name}.pub").read_bytes())
        assert isinstance(private.curve, ec.SECP384R1) and private.public_key() == public
        assert stat.S_IMODE((tmp_path / "supernodes" / name).stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "ca.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "server.key").stat().st_mode) == 0o600


def test_flower_accepts_the_supernode_public_key(tmp_path):
    pytest.importorskip("flwr")
    from flwr.cli.supernode.register import try_load_public_key

    CliRunner().invoke(_app(), ["federate", "certs", str(tmp_path), "--keys-only", "--supernode", "hospital_1"])
    assert try_load_public_key(tmp_path / "hospital_1.pub")  # flwr supernode register's own loader
    assert not (tmp_path / "ca.crt").exists()


def test_certs_refuse_what_they_cannot_use(tmp_path):
    result = CliRunner().invoke(_app(), ["federate", "certs", str(tmp_path)])
    assert isinstance(result.exception, ConfigError) and "--host" in str(result.exception)
    result = CliRunner().invoke(_app(), ["federate", "certs", str(tmp_path), "--keys-only",
                                         "--supernode", "../escape"])
    assert isinstance(result.exception, ConfigError) and "plain file name" in str(result.exception)


def test_federate_task_is_the_run_command_and_checks_the_config(tmp_path):
    config = tmp_path / "federation.toml"
    config.write_text('task = "aml"\nrounds = 1\n')
    result = CliRunner().invoke(_app(), ["federate", "toy", "--config", str(config)])
    assert isinstance(result.exception, ConfigError) and "trains task 'aml', not 'toy'" in str(result.exception)
    result = CliRunner().invoke(_app(), ["federate", "aml", "--config", str(config)])  # simulation needs nodes
    assert isinstance(result.exception, ConfigError) and "[[institutions]]" in str(result.exception)


def test_federate_app_writes_a_flower_app_that_flwr_can_read(tmp_path):
    pytest.importorskip("flwr")
    config = tmp_path / "federation.toml"
    config.write_text('task = "aml"\nrounds = 2\n[secagg]\nenabled = true\n[[institutions]]\ndata = "/secret"\n')
    out = tmp_path / "app"
    result = CliRunner().invoke(_app(), ["federate", "app", "aml", "--config", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    import tomllib

    meta = tomllib.loads((out / "pyproject.toml").read_text())
    assert meta["tool"]["flwr"]["app"]["components"] == {"serverapp": "sectorflow_app:server_app",
                                                         "clientapp": "sectorflow_app:client_app"}
    source = (out / "sectorflow_app.py").read_text()
    assert "/secret" not in source  # institutions name their own data on their own nodes
    sys.path.insert(0, str(out))
    try:
        import importlib

        module = importlib.import_module("sectorflow_app")
        from flwr.clientapp import ClientApp
        from flwr.serverapp import ServerApp

        assert isinstance(module.client_app, ClientApp) and isinstance(module.server_app, ServerApp)
    finally:
        sys.path.remove(str(out))
        sys.modules.pop("sectorflow_app", None)


def test_report_and_weights_go_to_folders_that_do_not_exist_yet(tmp_path, monkeypatch, registry):
    """Fresh-user check: `--report out/run.json` in a fresh clone (out/ is git-ignored, so absent) would have
    crashed with FileNotFoundError after the whole run; the folders are made before the run starts."""
    import json

    import numpy as np

    import toy_trainable
    from sectorflow.federated import simulation
    from sectorflow.federated.strategy import RunReport

    registry({"toy": toy_trainable.ToyPlugin()})
    config = tmp_path / "federation.toml"
    config.write_text('task = "toy"\nrounds = 1\n[strategy]\nmin_fit_clients = 2\nmin_available_clients = 2\n'
                      '[[institutions]]\nn = 8\n[[institutions]]\nn = 8\n')
    done = RunReport(run_id="r1", task="toy", model="linear", strategy="fedavg",
                     weights=[np.ones(1, np.float32), np.full(4, 2.0, np.float32)], model_sha256="ab")
    monkeypatch.setattr(simulation, "simulate", lambda cfg, spec=None, **kw: done)  # the run itself: not under test
    report, weights = tmp_path / "out" / "run.json", tmp_path / "out" / "w" / "global.npz"
    result = CliRunner().invoke(_app(), ["federate", "toy", "--config", str(config), "--report", str(report),
                                         "--weights", str(weights)])
    assert result.exit_code == 0, result.output
    assert json.loads(report.read_text())["run_id"] == "r1"
    assert np.load(weights)["w"].tolist() == [2.0] * 4
    result = CliRunner().invoke(_app(), ["federate", "toy", "--config", str(config), "--report", str(tmp_path)])
    assert isinstance(result.exception, ConfigError) and "is a folder" in str(result.exception)


def test_bundle_in_the_config_is_where_a_simulation_writes_its_bundle(tmp_path, registry):
    """`bundle = "DIR"` in federation.toml names the bundle's folder in simulation too (as --out does): a trainable
    without an export is refused before anything starts, naming both ways; a folder that is not a bundle is refused
    (checked with a trainable that exports)."""
    import dataclasses

    import toy_trainable

    class Exporting:
        from sectorflow import hookimpl

        @hookimpl
        def sectorflow_register_trainables(self, register) -> None:
            register(dataclasses.replace(toy_trainable.SPEC, task="toyx", export=lambda arrays, run, out: out))

    registry({"toy": toy_trainable.ToyPlugin(), "toyx": Exporting()})
    config = tmp_path / "federation.toml"
    body = f'bundle = "{tmp_path / "b"}"\n[[institutions]]\nn = 8\n[[institutions]]\nn = 8\n'
    config.write_text('task = "toy"\n' + body)
    result = CliRunner().invoke(_app(), ["federate", "toy", "--config", str(config)])
    assert isinstance(result.exception, ConfigError)
    assert "offers no bundle export: drop --out / bundle =" in str(result.exception)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "notes.txt").write_text("mine")
    config.write_text('task = "toyx"\n' + body)
    result = CliRunner().invoke(_app(), ["federate", "toyx", "--config", str(config)])
    assert isinstance(result.exception, ConfigError) and f"bundle = {tmp_path / 'b'} exists and is not a bundle" in str(
        result.exception)


def test_a_bundle_shipped_with_a_task_is_never_the_output(tmp_path):
    """`federate aml --out .../sectorflow_aml/bundle` replaced the shipped account model without a word (fresh-user
    report): the default bundle of any registered task, or a folder inside it, is refused before anything starts."""
    from sectorflow.host import get_task

    shipped = get_task("aml").default_bundle
    assert shipped is not None and (shipped / "manifest.json").is_file()
    before = {p.name: p.stat().st_mtime_ns for p in shipped.iterdir()}
    config = tmp_path / "federation.toml"
    config.write_text('task = "aml"\nmodel = "account_mlp"\nrounds = 1\n[[institutions]]\ntransactions = "a.csv"\n'
                      'labels = "a.csv"\n[[institutions]]\ntransactions = "b.csv"\nlabels = "b.csv"\n')
    for out in (shipped, shipped / "inner"):
        result = CliRunner().invoke(_app(), ["federate", "aml", "--config", str(config), "--out", str(out)])
        assert isinstance(result.exception, ConfigError), result.output
        assert "is the bundle shipped with task 'aml'" in str(result.exception)
    assert {p.name: p.stat().st_mtime_ns for p in shipped.iterdir()} == before



def _exporting_toy(registry, monkeypatch):
    """Task ``toyx``: the toy trainable with an export writing ``manifest.json``, and a run that is not under test."""
    import dataclasses

    import numpy as np
    import toy_trainable
    from sectorflow import hookimpl
    from sectorflow.federated import simulation
    from sectorflow.federated.strategy import RunReport

    def export(arrays, run, out):
        out.mkdir(parents=True, exist_ok=True)
        (out / "manifest.json").write_text(json.dumps({"run": run["run_id"]}))
        return out / "manifest.json"

    class Exporting:
        @hookimpl
        def sectorflow_register_trainables(self, register) -> None:
            register(dataclasses.replace(toy_trainable.SPEC, task="toyx", export=export))

    registry({"toy": toy_trainable.ToyPlugin(), "toyx": Exporting()})
    done = RunReport(run_id="r2", task="toyx", model="linear", strategy="fedavg",
                     weights=[np.ones(1, np.float32), np.full(4, 2.0, np.float32)], model_sha256="ab")
    monkeypatch.setattr(simulation, "simulate", lambda cfg, spec=None, **kw: done)


def test_an_out_folder_holding_a_bundle_needs_force(tmp_path, registry, monkeypatch):
    """`federate --out DIR` replaced a bundle already in DIR without asking (fresh-user report): refused before
    anything starts unless --force, as `sectorflow aml train --out` refuses."""
    _exporting_toy(registry, monkeypatch)
    config = tmp_path / "federation.toml"
    config.write_text('task = "toyx"\nrounds = 1\n[strategy]\nmin_fit_clients = 2\nmin_available_clients = 2\n'
                      '[[institutions]]\nn = 8\n[[institutions]]\nn = 8\n')
    out = tmp_path / "mine"
    out.mkdir()
    (out / "manifest.json").write_text('{"name": "my-bundle"}')
    args = ["federate", "toyx", "--config", str(config), "--out", str(out)]
    result = CliRunner().invoke(_app(), args)
    assert isinstance(result.exception, ConfigError), result.output
    assert str(result.exception) == (f"--out / bundle = {out} already holds a bundle (1 file(s), e.g. manifest.json): "
                                     "give a new or empty folder, or add --force to replace the bundle in it.")
    assert (out / "manifest.json").read_text() == '{"name": "my-bundle"}'
    result = CliRunner().invoke(_app(), [*args, "--force"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "manifest.json").read_text()) == {"run": "r2"}


def test_with_report_stdout_gets_one_line_not_the_report_again(tmp_path, registry, monkeypatch):
    """`federate --report FILE` also printed the whole report JSON to stdout (fresh-user report)."""
    _exporting_toy(registry, monkeypatch)
    config = tmp_path / "federation.toml"
    config.write_text('task = "toyx"\nrounds = 1\n[strategy]\nmin_fit_clients = 2\nmin_available_clients = 2\n'
                      '[[institutions]]\nn = 8\n[[institutions]]\nn = 8\n')
    report = tmp_path / "run.json"
    result = CliRunner().invoke(_app(), ["federate", "toyx", "--config", str(config), "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert json.loads(report.read_text())["run_id"] == "r2"
    assert result.stdout == f"run r2: 0 round(s); report written to {report}\n"
    result = CliRunner().invoke(_app(), ["federate", "toyx", "--config", str(config)])
    assert json.loads(result.stdout)["run_id"] == "r2"  # without --report: the report on stdout, as before
