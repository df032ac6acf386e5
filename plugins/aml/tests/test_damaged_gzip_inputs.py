"""Damaged input files given to the AML commands (fresh-user report, 2 Dec 2026): a truncated ``.gz`` made
``sectorflow aml train`` / ``evaluate`` / ``cases`` / ``explain`` say "stopped by SIGINT" and exit 130 (click turns
the ``EOFError`` into ``Abort``); a ``.gz`` that is not gzip, or a byte that is not UTF-8 inside one, was a
``BadGzipFile`` / ``UnicodeDecodeError`` traceback (exit 1). Each is now one ``error:`` line naming the file, where
it stops being readable and the fix, exit 2 (``sectorflow.open_text``, shared by every reader)."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import pytest
from sectorflow_aml.cases import read_cases

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "samples" / "aml" / "transactions.csv.gz"
NODES = REPO / "samples" / "aml" / "nodes.csv.gz"


def _cut(source: Path, target: Path, keep: int) -> Path:
    target.write_bytes(source.read_bytes()[:keep])
    return target


def _not_utf8(source: Path, target: Path) -> Path:
    """``source``'s text (over 64 KiB, so UTF-8 is detected from its start) with a GB18030 line at the end."""
    text = gzip.decompress(source.read_bytes())
    target.write_bytes(gzip.compress(text + "备注,转账\n".encode("gb18030")))
    return target


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """Good results of the sample, and a truncated, a plain (not gzip) and a non-UTF-8 ``.gz`` of each input."""
    from sectorflow import cli

    folder = tmp_path_factory.mktemp("damaged")
    results = folder / "results.jsonl"
    assert cli.main(["run", "aml", str(SAMPLE), "--format", "amlsim", "--output", str(results),
                     "--no-progress"]) == 0
    (folder / "results.jsonl.gz").write_bytes(gzip.compress(results.read_bytes()))
    plain = folder / "plain.csv.gz"
    plain.write_bytes(gzip.decompress(SAMPLE.read_bytes())[:5000])
    case = read_cases(results)[0].case_id
    return {"results": results, "case": Path(case), "plain": plain,
            "cut_tx": _cut(SAMPLE, folder / "cut_tx.csv.gz", 20000),
            "cut_labels": _cut(NODES, folder / "cut_labels.csv.gz", 200),
            "cut_results": _cut(folder / "results.jsonl.gz", folder / "cut_results.jsonl.gz", 3000),
            "gb_tx": _not_utf8(SAMPLE, folder / "gb_tx.csv.gz"),
            "gb_results": _not_utf8(folder / "results.jsonl.gz", folder / "gb_results.jsonl.gz")}


def _commands(f: dict[str, Path], tmp: Path) -> list[tuple[str, list[str], Path]]:
    """``(kind, argv, the damaged file it names)`` for each AML command and input option."""
    r, case = str(f["results"]), str(f["case"])
    out = []
    for kind in ("cut", "plain", "gb"):
        tx = f["plain"] if kind == "plain" else f[f"{kind}_tx"]
        out += [(kind, ["aml", "train", str(tx), "--format", "amlsim", "--labels", str(NODES), "--out",
                        str(tmp / f"b-{kind}")], tx),
                (kind, ["aml", "evaluate", "--results", r, "--labels", str(NODES), "--transactions", str(tx),
                        "--format", "amlsim"], tx),
                (kind, ["aml", "explain", case, "--results", r, "--input", str(tx), "--format", "amlsim", "--png",
                        str(tmp / "x.png")], tx)]
        res = f["plain"] if kind == "plain" else f[f"{kind}_results"]
        out += [(kind, ["aml", "cases", "--results", str(res)], res),
                (kind, ["aml", "evaluate", "--results", str(res), "--labels", str(NODES)], res),
                (kind, ["aml", "explain", case, "--results", str(res), "--input", str(SAMPLE), "--format",
                        "amlsim", "--png", str(tmp / "x.png")], res)]
    labels = f["cut_labels"]
    out += [("cut", ["aml", "train", str(SAMPLE), "--format", "amlsim", "--labels", str(labels), "--out",
                     str(tmp / "b-labels")], labels),
            ("cut", ["aml", "evaluate", "--results", r, "--labels", str(labels)], labels),
            ("plain", ["aml", "evaluate", "--results", r, "--labels", str(f["plain"])], f["plain"])]
    return out


FRAGMENT = {"cut": "is truncated (the gzip file ends early", "plain": "is not a valid gzip file",
            "gb": "is not UTF-8 text"}
FIX = {"cut": "copy or export it again", "plain": "Rename it without .gz", "gb": "--encoding"}


def test_every_aml_command_names_the_damaged_file_and_exits_2(files, cli_main, capsys, tmp_path):
    for kind, argv, damaged in _commands(files, tmp_path):
        capsys.readouterr()
        code = cli_main(argv)
        err = capsys.readouterr().err
        assert code == 2, (argv, err)
        assert "SIGINT" not in err and "Traceback" not in err, (argv, err)
        assert f"{damaged}" in err and FRAGMENT[kind] in err and FIX[kind] in err, (argv, err)
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "b-cut").exists()


def test_the_message_says_how_far_the_file_reads(files, cli_main, capsys):
    cut = files["cut_results"].read_bytes()
    readable = zlib.decompressobj(wbits=31).decompress(cut)  # what a gzip reader gets before the data ends
    code = cli_main(["aml", "cases", "--results", str(files["cut_results"])])
    err = capsys.readouterr().err
    assert code == 2
    lines = readable.count(b"\n")
    assert f"it reads up to line {lines:,} ({len(readable):,} byte(s) decompressed)" in err, err
    gb = cli_main(["aml", "cases", "--results", str(files["gb_results"])])
    err = capsys.readouterr().err
    n = files["results"].read_text().count("\n")
    assert gb == 2 and f"on line {n + 1} (byte 1 of the line)" in err, err


def test_run_on_a_truncated_gz_exits_2_and_leaves_no_output(files, cli_main, capsys, tmp_path):
    target = tmp_path / "out.jsonl"
    for mode in ("reject", "skip"):
        code = cli_main(["run", "aml", str(files["cut_tx"]), "--format", "amlsim", "--output", str(target),
                         "--on-error", mode, "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and f"Input file {files['cut_tx']} is truncated (the gzip file ends early" in err
        assert "it reads up to line 2,286 (" in err and "SIGINT" not in err  # cut inside the encoding's sample
        assert sorted(p.name for p in tmp_path.iterdir()) == []  # no results, no partial file
    target.write_text("earlier\n")
    assert cli_main(["run", "aml", str(files["cut_tx"]), "--format", "amlsim", "--output", str(target),
                     "--no-progress"]) == 2
    assert target.read_text() == "earlier\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
