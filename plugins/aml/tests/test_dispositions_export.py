"""``sectorflow aml dispositions export``: never overwrites without ``--force``, never writes an empty labels file,
never creates a missing store (fresh-user report, 3 Dec 2026: ``--out`` overwrote anything, even the .csv.gz input;
with a mistyped ``--tenant`` a good labels file became a header-only file, exit 0; ``--state missing.sqlite`` made an
empty SQLite file)."""

from __future__ import annotations

from datetime import datetime, timezone

from sectorflow import open_state_store

from sectorflow_aml.cases import case_id
from sectorflow_aml.labels import read_labels
from sectorflow_aml.workbench.decisions import LABEL_HEADER, DecisionBook

AT = datetime(2024, 2, 3, 10, 15, tzinfo=timezone.utc)


def _store_with_decisions(path, tenant="bank-1"):
    store = open_state_store(str(path))
    book = DecisionBook(store, tenant)
    book.decide(case_id("A", "2024-01"), "A", "2024-01", "close_true_positive", "analyst-1", "funnel", now=AT)
    book.decide(case_id("B", "2024-01"), "B", "2024-01", "close_false_positive", "analyst-2", "payroll", now=AT)
    store.close()
    return path


def test_export_writes_the_tenants_decisions(tmp_path, cli_main, capsys):
    db = _store_with_decisions(tmp_path / "wb.sqlite")
    out = tmp_path / "labels.csv"
    assert cli_main(["aml", "dispositions", "export", "--out", str(out), "--tenant", "bank-1",
                     "--state", str(db)]) == 0
    assert out.read_text().splitlines()[0] == ",".join(LABEL_HEADER)
    assert read_labels(out).label == {"A": 1, "B": 0}
    assert f"2 decided cases of tenant bank-1 -> {out}" in capsys.readouterr().err


def test_an_existing_out_needs_force(tmp_path, cli_main, capsys):
    db = _store_with_decisions(tmp_path / "wb.sqlite")
    out = tmp_path / "transactions.csv.gz"
    out.write_bytes(b"\x1f\x8b keep me")
    args = ["aml", "dispositions", "export", "--out", str(out), "--tenant", "bank-1", "--state", str(db)]
    assert cli_main(args) == 2
    err = capsys.readouterr().err
    assert f"--out {out} already exists (10 bytes)" in err and "--force" in err
    assert out.read_bytes() == b"\x1f\x8b keep me"
    assert cli_main([*args, "--force"]) == 0
    assert read_labels(out).label == {"A": 1, "B": 0}


def test_a_tenant_without_decisions_is_an_error_that_writes_nothing(tmp_path, cli_main, capsys):
    db = _store_with_decisions(tmp_path / "wb.sqlite")
    _store_with_decisions(db, tenant="bank-2")
    good = tmp_path / "labels.csv"
    assert cli_main(["aml", "dispositions", "export", "--out", str(good), "--tenant", "bank-1",
                     "--state", str(db)]) == 0
    before = good.read_bytes()
    capsys.readouterr()
    # a mistyped tenant, with --force: before, the good file became a header-only file and the exit code was 0
    assert cli_main(["aml", "dispositions", "export", "--out", str(good), "--tenant", "bank1", "--state", str(db),
                     "--force"]) == 2
    err = capsys.readouterr().err
    assert "No decided cases of tenant 'bank1'" in err and "nothing written" in err
    assert "Tenants with decisions there: bank-1, bank-2" in err
    assert good.read_bytes() == before
    fresh = tmp_path / "new.csv"
    assert cli_main(["aml", "dispositions", "export", "--out", str(fresh), "--tenant", "nobody",
                     "--state", str(db)]) == 2
    assert not fresh.exists()


def test_a_missing_store_is_refused_and_not_created(tmp_path, cli_main, capsys):
    missing = tmp_path / "missing.sqlite"
    out = tmp_path / "labels.csv"
    assert cli_main(["aml", "dispositions", "export", "--out", str(out), "--state", str(missing)]) == 2
    err = capsys.readouterr().err
    assert f"--state {missing}: no state store at {missing}" in err
    assert not missing.exists() and not out.exists()


def test_the_store_itself_is_refused_as_out_even_with_force(tmp_path, cli_main, capsys, monkeypatch):
    """Fresh-user report, 3 Dec 2026: ``--out dec.sqlite --state dec.sqlite --force`` replaced the store holding
    every decision with a 251-byte CSV."""
    db = _store_with_decisions(tmp_path / "dec.sqlite")
    before = db.read_bytes()
    monkeypatch.chdir(tmp_path)
    for out in ("dec.sqlite", str(db), "./dec.sqlite-wal"):
        assert cli_main(["aml", "dispositions", "export", "--out", out, "--tenant", "bank-1", "--state", str(db),
                         "--force"]) == 2, out
        assert "is the state store" in " ".join(capsys.readouterr().err.split())
    assert db.read_bytes() == before
    assert read_labels(_export_ok(tmp_path, db, cli_main)).label == {"A": 1, "B": 0}


def _export_ok(tmp_path, db, cli_main):
    out = tmp_path / "labels.csv"
    assert cli_main(["aml", "dispositions", "export", "--out", str(out), "--tenant", "bank-1", "--state", str(db)]) == 0
    return out


def test_a_failed_export_creates_no_folder(tmp_path, cli_main, capsys):
    """Fresh-user report: ``--out newdir/x.csv`` with a bad --state failed (exit 2) but left newdir behind; so did a
    tenant without decisions. Now a failed export creates nothing; a good one makes the folder."""
    db = _store_with_decisions(tmp_path / "wb.sqlite")
    out = tmp_path / "newdir" / "deeper" / "x.csv"
    assert cli_main(["aml", "dispositions", "export", "--out", str(out), "--state", str(tmp_path / "nope.sqlite")]) == 2
    assert "no state store at" in capsys.readouterr().err
    assert not (tmp_path / "newdir").exists()
    assert cli_main(["aml", "dispositions", "export", "--out", str(out), "--tenant", "nobody", "--state", str(db)]) == 2
    assert not (tmp_path / "newdir").exists()
    assert cli_main(["aml", "dispositions", "export", "--out", str(out), "--tenant", "bank-1", "--state", str(db)]) == 0
    assert read_labels(out).label == {"A": 1, "B": 0}
