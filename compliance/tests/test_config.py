"""Audit configuration: environment and TOML file, retention default, role separation, key-file errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sectorflow.compliance import AuditConfigError, AuditKeyError, generate_key_file, load_config, load_key_file


def test_defaults_are_on_embedded_with_180_days_retention(tmp_path: Path) -> None:
    import getpass

    cfg = load_config({"SECTORFLOW_HOME": str(tmp_path)})
    assert cfg.enabled and cfg.embedded and cfg.retention_days == 180 and cfg.regulated == frozenset()
    assert cfg.db == str(tmp_path / "audit" / "audit.db") and cfg.key_file == tmp_path / "keys" / "audit-key.json"
    assert cfg.audit_admins == frozenset({getpass.getuser()}) and cfg.sqlite_synchronous == "FULL"
    assert not cfg.is_regulated("aml")
    assert not load_config({"SECTORFLOW_HOME": str(tmp_path), "SECTORFLOW_AUDIT": "off"}).enabled
    assert not load_config({"SECTORFLOW_AUDIT_DB": "/x.db", "SECTORFLOW_AUDIT_KEY": "/k.json"}).embedded


def test_toml_file_and_environment_override(tmp_path: Path) -> None:
    toml = tmp_path / "audit.toml"
    toml.write_text('[audit]\ndb = "/tmp/x.db"\nkey_file = "/tmp/k.json"\nregulated = ["aml", "federated"]\n'
                    'retention_days = 400\nencrypt_payloads = true\nsubject_fields = { aml = "customer_id" }\n'
                    'audit_admins = "alice"\n')
    cfg = load_config({"SECTORFLOW_AUDIT_CONFIG": str(toml), "SECTORFLOW_AUDIT_DB": "/tmp/y.db"})
    assert cfg.enabled and cfg.db == "/tmp/y.db" and str(cfg.key_file) == "/tmp/k.json"
    assert cfg.is_regulated("aml") and cfg.is_regulated("federated") and not cfg.is_regulated("ocr")
    assert cfg.retention_days == 400 and cfg.subject_fields == {"aml": "customer_id"}
    assert cfg.audit_admins == frozenset({"alice"})
    off = load_config({"SECTORFLOW_AUDIT_CONFIG": str(toml), "SECTORFLOW_AUDIT": "off"})
    assert not off.enabled


@pytest.mark.parametrize("env, message", [
    ({"SECTORFLOW_AUDIT_RETENTION_DAYS": "30"}, "six months"),
    ({"SECTORFLOW_AUDIT_ADMINS": "alice,bob", "SECTORFLOW_AUDIT_OPERATORS": "bob"}, "separates"),
    ({"SECTORFLOW_AUDIT": "maybe"}, "on or off"),
    ({"SECTORFLOW_AUDIT_CONFIG": "/nonexistent/audit.toml"}, "SECTORFLOW_AUDIT_CONFIG"),
])
def test_bad_settings_say_what_to_fix(env: dict[str, str], message: str) -> None:
    with pytest.raises(AuditConfigError, match=message):
        load_config(env)


def test_key_file_errors(tmp_path: Path, audited: Any) -> None:
    with pytest.raises(AuditKeyError, match="keygen"):
        load_key_file(tmp_path / "missing.json")
    kf = generate_key_file(tmp_path / "k.json")
    with pytest.raises(AuditKeyError, match="exists"):
        generate_key_file(tmp_path / "k.json")
    assert load_key_file(tmp_path / "k.json").key_id == kf.key_id
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(AuditKeyError, match="unreadable"):
        load_key_file(tmp_path / "bad.json")
    with pytest.raises(AuditConfigError, match="SECTORFLOW_AUDIT_KEY"):
        audited(SECTORFLOW_AUDIT_KEY=None)


def test_a_store_url_of_another_database_is_refused() -> None:
    """Fresh-user finding: SECTORFLOW_AUDIT_DB=mysql://x was taken for a SQLite path ("No audit log at mysql://x:
    the file does not exist")."""
    with pytest.raises(AuditConfigError, match="'mysql://x' is neither a SQLite file path .* nor a postgresql:// DSN"):
        load_config({"SECTORFLOW_AUDIT_DB": "mysql://x"})
    assert load_config({"SECTORFLOW_AUDIT_DB": "sqlite:///var/audit.db"}).db == "sqlite:///var/audit.db"


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_key_file_other_users_can_read_is_refused(tmp_path: Path) -> None:
    """Fresh-user finding: a key file left at mode 0644 (signing, digest and key-wrapping keys) was used without a
    word. 0600 and 0640 (a service account's group) are accepted."""
    path = tmp_path / "k.json"
    kf = generate_key_file(path)
    for mode in (0o644, 0o604, 0o660):
        path.chmod(mode)
        with pytest.raises(AuditKeyError, match=f"has mode {mode:04o}: other users can read or change it.*chmod 600"):
            load_key_file(path)
    for mode in (0o600, 0o640, 0o400):
        path.chmod(mode)
        assert load_key_file(path).key_id == kf.key_id
