"""The ``sectorflow`` command line: tasks, schema, run (JSON lines, CSV, a plugin's format, stdin), bad rows."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from core_support import PYTHON, VENV_BIN, child_env
from sectorflow import Taskflow
from sectorflow.cli import main

ITEMS = [{"text": "hello world"}, {"text": "Ship 42 crates"}, {"text": "x"}, {"text": "UPPER lower"},
         {"text": "  spaced  "}]


@pytest.fixture
def cli(echo_registry, capsys, monkeypatch):
    """``cli(*args) -> (exit code, stdout, stderr)``, in-process, with only the echo plugin registered."""
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str, stdin: str | bytes | None = None) -> tuple[int, str, str]:
        if stdin is not None:
            data = stdin if isinstance(stdin, bytes) else stdin.encode()
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def expected_lines(items, **options) -> list[dict]:
    return [r.model_dump(mode="json") for r in Taskflow("echo", **options)(items)]


def write_jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_tasks_lists_the_registered_tasks(cli):
    code, out, _ = cli("tasks", "--json")
    assert code == 0
    assert json.loads(out) == Taskflow.tasks()
    code, out, _ = cli("tasks")
    assert code == 0
    table_rows = [line for line in out.splitlines() if "echo" in line and "0.1.0" in line]
    assert len(table_rows) == 2 and "echo_counter" in table_rows[1] and "cpu, gpu," in table_rows[0]
    # each description on its own line under the table, whole (not squeezed into a column)
    echo = next(row for row in Taskflow.tasks() if row["task"] == "echo")
    text = " ".join(out.split())
    assert f"echo: {' '.join(echo['description'].split())}" in text
    assert "languages" in out and "precisions" in out  # whole headers (were cut to "langua…" at 80 columns)


def test_schema_prints_the_tasks_json_schema(cli):
    code, out, _ = cli("schema", "parrot")
    assert code == 0 and json.loads(out) == Taskflow("echo").schema()


def test_run_jsonl_to_a_file(cli, tmp_path):
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_jsonl(source, ITEMS)
    code, out, err = cli("run", "echo", str(source), "--output", str(target), "--batch-size", "2")
    assert code == 0 and out == ""
    assert [json.loads(line) for line in target.read_text().splitlines()] == expected_lines(ITEMS)
    assert "5 item(s) processed, 0 row(s) skipped." in err


def test_run_csv_to_stdout(cli, tmp_path):
    source = tmp_path / "in.csv"
    with source.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["id", "text"])
        writer.writeheader()
        writer.writerows({"id": i, **item} for i, item in enumerate(ITEMS))
    code, out, _ = cli("run", "echo", str(source))
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == expected_lines(ITEMS)


def test_run_reads_stdin_a_plugin_format_and_options(cli, tmp_path):
    code, out, _ = cli("run", "echo", "-", "--option", "uppercase=true", stdin="".join(json.dumps(i) + "\n" for i in ITEMS))
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == expected_lines(ITEMS, uppercase=True)
    source = tmp_path / "texts.txt"
    source.write_text("".join(item["text"] + "\n" for item in ITEMS))
    code, out, _ = cli("run", "echo", str(source), "--format", "lines")
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == expected_lines(ITEMS)


def test_on_error_skip_runs_the_good_rows_and_reports_bad_row_numbers(cli, tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("text\nfine\n\"\"\nalso fine\n\"\"\nlast\n")  # lines 3 and 5 have an empty text
    target = tmp_path / "out.jsonl"
    code, _, err = cli("run", "echo", str(source), "-o", str(target), "--on-error", "skip")
    assert code == 0
    assert [json.loads(line)["text"] for line in target.read_text().splitlines()] == ["fine", "also fine", "last"]
    # a row is named by its file line, as an editor or a spreadsheet shows it (the header is line 1)
    assert "skipped row 3: text: missing or empty: a value is required" in err and "skipped row 5: text: missing or empty: a value is required" in err
    assert "3 item(s) processed, 2 row(s) skipped." in err


def test_on_error_reject_writes_nothing_and_exits_2(cli, tmp_path):
    rows = ITEMS * 300 + [{"text": ""}]  # the bad row comes after more than one chunk of good ones
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_jsonl(source, rows)
    code, out, err = cli("run", "echo", str(source), "-o", str(target))
    assert code == 2 and not target.exists() and out == ""
    assert f"row {len(rows)}: text: String should have at least 1 character" in err
    code, out, err = cli("run", "echo", "-", stdin="".join(json.dumps(r) + "\n" for r in rows))
    assert code == 2 and out == ""
    assert f"row {len(rows)}: text" in err


def test_reject_reports_every_bad_row_once(cli, tmp_path):
    rows = [{"text": "ok"}, {"text": ""}, {"text": "fine"}, {"nope": 1}, {"text": ""}]
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_jsonl(source, rows)
    code, out, err = cli("run", "echo", str(source), "-o", str(target))
    assert code == 2 and not target.exists()
    assert f"3 bad row(s) in {source} (first: row 2); nothing was written." in err
    listed = [line.strip() for line in err.splitlines() if line.strip().startswith("row ")]
    assert listed == ["row 2: text: String should have at least 1 character", "row 4: text: missing or empty: a value is required",
                      "row 5: text: String should have at least 1 character"]


def test_a_run_where_every_row_was_skipped_fails(cli, tmp_path):
    source = tmp_path / "in.jsonl"
    write_jsonl(source, [{"text": ""}, {"nope": 1}])
    code, out, err = cli("run", "echo", str(source), "--on-error", "skip")
    assert code == 1 and out == ""
    assert f"every row of {source} was skipped; nothing was processed." in err


def test_a_file_named_after_a_task_format_is_read_in_that_format(cli, tmp_path):
    source = tmp_path / "notes.lines"
    source.write_text("first line\n{not json}\n")
    code, out, err = cli("run", "echo", str(source))
    assert code == 0, err
    assert [json.loads(line)["text"] for line in out.splitlines()] == ["first line", "{not json}"]
    code, out, err = cli("run", "echo", str(source), "--format", "jsonl")  # an explicit format still wins
    assert code == 2 and "row 1" in err


def test_a_line_that_is_not_json_is_rejected_by_row(cli, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "ok"}\n[1, 2]\n')
    code, out, err = cli("run", "echo", str(source))
    assert code == 2 and out == "" and "1 bad row(s)" in err and "  row 2: a JSON list, not an object" in err


@pytest.mark.parametrize(
    ("args", "fragment"),
    [(("run", "ecko", "in.jsonl"), "Unknown task 'ecko'. Did you mean 'echo'? Known tasks: echo, echo_counter."),
     (("run", "echo", "missing.jsonl"), "Input file missing.jsonl does not exist."),
     (("run", "echo", "in.jsonl", "--format", "xml"), "Task 'echo' reads the formats csv, jsonl, lines; not 'xml'."),
     (("run", "echo", "in.jsonl", "--device", "npu"), "has 0 npu device(s)"),
     (("run", "echo", "in.jsonl", "--precision", "int8"), "precision='int8' is not available"),
     (("schema", "nope"), "Unknown task 'nope'.")],
)
def test_user_errors_print_a_message_and_exit_2(cli, tmp_path, monkeypatch, args, fragment):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "in.jsonl", ITEMS)
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    assert fragment in err


def test_usage_errors_exit_2(cli, tmp_path):
    code, _, err = cli("run", "echo", "x.jsonl", "--option", "no-equals-sign")
    assert code == 2 and "write KEY=VALUE" in err
    code, _, _ = cli("run", "echo")
    assert code == 2


def test_console_script_in_a_fresh_process():
    script = VENV_BIN / "sectorflow"
    command = [str(script)] if script.exists() else [PYTHON, "-m", "sectorflow.cli"]
    env = child_env(SECTORFLOW_LOAD_PLUGINS="")
    done = subprocess.run([*command, "tasks", "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert (done.returncode, json.loads(done.stdout)) == (0, [])
    done = subprocess.run([*command, "run", "echo", "-"], env=env, capture_output=True, text=True, timeout=120,
                          input="")
    assert done.returncode == 2 and "Unknown task 'echo'." in done.stderr and done.stdout == ""


def test_run_reads_gzipped_input(cli, tmp_path):
    import gzip

    source = tmp_path / "in.jsonl.gz"
    with gzip.open(source, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(item) + "\n" for item in ITEMS)
    code, out, _ = cli("run", "echo", str(source))
    assert code == 0 and [json.loads(line) for line in out.splitlines()] == expected_lines(ITEMS)


def test_main_returns_the_exit_code_a_command_asks_for():
    """A plugin command's ``typer.Exit(3)`` must reach the shell as 3 (``sectorflow audit verify`` relies on it)."""
    import typer

    from sectorflow import cli

    probe = typer.Typer()

    @probe.command("fail-with-three")
    def fail_with_three() -> None:
        raise typer.Exit(3)

    cli.app.add_typer(probe, name="exit-probe")
    try:
        assert cli.main(["exit-probe", "fail-with-three"]) == 3
    finally:
        cli.app.registered_groups = [g for g in cli.app.registered_groups if g.name != "exit-probe"]


def test_output_that_is_the_input_file_is_refused_and_the_input_kept(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "one.jsonl"
    write_jsonl(source, ITEMS)
    before = source.read_bytes()
    for target in ("one.jsonl", str(source), "./sub/../one.jsonl"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        code, out, err = cli("run", "echo", "one.jsonl", "-o", target)
        assert code == 2 and out == "" and "is the input file" in err
        assert source.read_bytes() == before
    (tmp_path / "link.jsonl").hardlink_to(source)
    code, _, err = cli("run", "echo", "one.jsonl", "-o", "link.jsonl")
    assert code == 2 and "is the input file" in err and source.read_bytes() == before


def _gzip_bytes(text: str) -> bytes:
    import gzip

    return gzip.compress(text.encode())


@pytest.mark.parametrize(
    ("name", "content", "fmt", "fragment"),
    [("bin", bytes(range(256)) * 4, None, "is not UTF-8 text"),  # no suffix: guessed JSON lines
     ("bin.dat", bytes(range(256)) * 4, "jsonl", "is not UTF-8 text"),
     ("bin.dat", bytes(range(256)) * 4, "csv", "is not UTF-8 text"),
     ("bin.dat", bytes(range(256)) * 4, "lines", "is not UTF-8 text"),  # a plugin's reader
     ("plain.csv.gz", b"text\nhello\n", None, "is not a valid gzip file"),
     ("cut.jsonl.gz", _gzip_bytes('{"text": "hello"}\n' * 2000)[:-30], None, "is truncated")],
)
def test_undecodable_input_is_an_input_error_not_a_traceback(cli, tmp_path, name, content, fmt, fragment):
    source = tmp_path / name
    source.write_bytes(content)
    args = ("run", "echo", str(source)) + (("--format", fmt) if fmt else ())
    for mode in ("reject", "skip"):
        code, out, err = cli(*args, "--on-error", mode)
        # skip mode streams: rows read before a truncation are already written, but the exit code says it failed
        assert code == 2 and (out == "" or mode == "skip")
        assert fragment in err and f"Input file {source}" in err and len(err.strip().splitlines()) == 1
    if not name.endswith(".gz"):  # standard input is not decompressed
        code, out, err = cli("run", "echo", "-", *args[3:], stdin=content)
        assert code == 2 and out == "" and f"Input file standard input {fragment}" in err


def test_an_output_in_a_missing_folder_is_a_config_error(cli, tmp_path):
    source = tmp_path / "in.jsonl"
    write_jsonl(source, ITEMS)
    code, out, err = cli("run", "echo", str(source), "-o", str(tmp_path / "nonexistent" / "o.jsonl"))
    assert code == 2 and out == ""
    assert f"Cannot write --output {tmp_path / 'nonexistent' / 'o.jsonl'}: No such file or directory" in err


@pytest.mark.parametrize("name", ["excel.csv", "excel.jsonl"])
def test_a_utf8_byte_order_mark_is_ignored(cli, tmp_path, name):
    source = tmp_path / name
    body = "text\r\nhello world\r\nx\r\n" if name.endswith(".csv") else '{"text": "hello world"}\n{"text": "x"}\n'
    source.write_bytes(b"\xef\xbb\xbf" + body.encode())
    code, out, err = cli("run", "echo", str(source))
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == expected_lines([{"text": "hello world"}, {"text": "x"}])


def test_on_error_skip_skips_lines_that_are_not_json_objects(cli, tmp_path):
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text('{"text": "fine"}\n{"text": broken\n[1, 2]\n{"text": "last"}\n')
    code, _, err = cli("run", "echo", str(source), "-o", str(target), "--on-error", "skip")
    assert code == 0, err
    assert [json.loads(line)["text"] for line in target.read_text().splitlines()] == ["fine", "last"]
    assert "skipped row 2: not JSON: Expecting value" in err and "skipped row 3: a JSON list, not an object" in err
    assert "2 item(s) processed, 2 row(s) skipped." in err
    code, out, err = cli("run", "echo", str(source), "-o", str(target), "--on-error", "reject")
    assert code == 2 and out == "" and "2 bad row(s)" in err
    assert "  row 2: not JSON: Expecting value" in err and "  row 3: a JSON list, not an object" in err


def test_run_records_the_os_user_as_the_actor(cli, echo_registry, tmp_path, monkeypatch):
    import socket

    monkeypatch.setenv("LOGNAME", "auditor-7")  # getpass.getuser() reads LOGNAME first
    source = tmp_path / "in.jsonl"
    write_jsonl(source, ITEMS[:2])
    code, _, err = cli("run", "echo", str(source))
    assert code == 0, err
    calls = [e for e in echo_registry.events if e.kind in ("call_started", "call_finished")]
    assert len(calls) == 2
    assert {(e.context.actor, e.context.channel, e.context.source) for e in calls} == {
        ("auditor-7", "cli", socket.gethostname())}


@pytest.mark.parametrize("threads", ["0", "-1"])
def test_num_threads_below_one_is_refused(cli, tmp_path, threads):
    source = tmp_path / "in.jsonl"
    write_jsonl(source, ITEMS)
    code, out, err = cli("run", "echo", str(source), "--num-threads", threads)
    assert code == 2 and out == ""
    # typer's own wording or click's, depending on which validates the range first
    assert ("Invalid value for '--num-threads': Input should be greater than or equal to 1" in err
            or f"Invalid value for '--num-threads': {threads} is not in the range x>=1." in err)


def test_a_directory_as_input_is_named_as_a_directory(cli, tmp_path):
    code, out, err = cli("run", "echo", str(tmp_path))
    assert code == 2 and out == ""
    assert f"Input {tmp_path} is a directory" in err and "does not exist" not in err


@pytest.mark.parametrize(("name", "content"), [("empty.jsonl", ""), ("header.csv", "text\n"), ("blank.jsonl", "\n\n")])
def test_an_input_without_rows_exits_1_with_an_error(cli, tmp_path, name, content):
    # an empty export is most likely a failed one: exit 1 (it was 0 with a warning, and 1 only when --output existed)
    source = tmp_path / name
    source.write_text(content)
    code, out, err = cli("run", "echo", str(source))
    assert code == 1 and out == ""
    assert "0 item(s) processed, 0 row(s) skipped." in err and f"error: no rows in {source}" in err
    code, out, err = cli("run", "echo", "-", "--format", source.suffix[1:], stdin=content)
    assert code == 1 and out == "" and "error: no rows in standard input" in err


def test_history_feeds_a_stateful_task_first_and_writes_only_the_inputs_results(cli, tmp_path):
    earlier, today, target = tmp_path / "earlier.jsonl", tmp_path / "today.jsonl", tmp_path / "out.jsonl"
    write_jsonl(earlier, ITEMS[:3])
    write_jsonl(today, ITEMS[3:])
    code, _, err = cli("run", "echo_counter", str(today), "--history", str(earlier), "--output", str(target))
    assert code == 0, err
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["seq"] for r in rows] == [4, 5] and [r["text"] for r in rows] == [i["text"] for i in ITEMS[3:]]
    assert "3 item(s) replayed (results not written)" in err and "2 item(s) processed" in err


def test_history_is_refused_for_a_stateless_task(cli, tmp_path):
    earlier, today = tmp_path / "earlier.jsonl", tmp_path / "today.jsonl"
    write_jsonl(earlier, ITEMS[:2])
    write_jsonl(today, ITEMS[2:])
    code, out, err = cli("run", "echo", str(today), "--history", str(earlier))
    assert code == 2 and out == "" and "keeps no state between items" in err


def test_a_run_that_fails_part_way_leaves_no_partial_output_and_keeps_the_earlier_file(cli, tmp_path, monkeypatch):
    """Results go to a temporary file renamed at the end: a run that fails after the first 1,024-item chunk (an aml
    run missing an FX rate on row 3,001 left 2,048 of 3,775 lines, over the previous day's complete file, with exit
    code 2: fresh-user check) leaves the earlier --output untouched and no partial file behind."""
    from sectorflow import ConfigError
    from sectorflow.taskflow import Taskflow as TF

    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_jsonl(source, [{"text": f"row {i}"} for i in range(2500)])
    target.write_text('{"earlier": "results"}\n')
    real_run, calls = TF.run, []

    def failing_run(self, items, **kwargs):
        calls.append(len(items))
        if len(calls) == 2:
            raise ConfigError("no rate for row 1,025")
        return real_run(self, items, **kwargs)

    monkeypatch.setattr(TF, "run", failing_run)
    code, out, err = cli("run", "echo", str(source), "--output", str(target))
    assert code == 2 and "no rate for row 1,025" in err and calls == [1024, 1024]
    assert target.read_text() == '{"earlier": "results"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]
    monkeypatch.setattr(TF, "run", real_run)  # a complete run replaces it
    code, _, err = cli("run", "echo", str(source), "--output", str(target))
    assert code == 0 and len(target.read_text().splitlines()) == 2500
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]


def test_a_file_whose_suffix_names_no_format_asks_for_format_before_loading_a_model(cli, tmp_path):
    """notes.txt for a task without a txt format was read as JSON lines: every row 'not JSON: Expecting value'."""
    source = tmp_path / "notes.txt"
    source.write_text("hello world\nbye\n")
    code, out, err = cli("run", "echo", str(source))
    assert code == 2 and out == ""
    assert (f"Cannot tell the format of {source} from its name (.txt): task 'echo' reads csv, jsonl, lines. Give "
            "--format, e.g. --format jsonl") in err
    code, out, err = cli("run", "echo", str(source), "--format", "jsnol")
    assert code == 2 and "Task 'echo' reads the formats csv, jsonl, lines; not 'jsnol'. Did you mean 'jsonl'?" in err
    code, out, err = cli("run", "echo", str(source), "--format", "LINES")  # an explicit format, in any case
    assert code == 0, err
    assert [json.loads(line)["text"] for line in out.splitlines()] == ["hello world", "bye"]
    for name in ("in.ndjson", "in.json", "noext"):  # JSON lines by name, or no suffix at all
        other = tmp_path / name
        other.write_text('{"text": "hi"}\n')
        code, out, err = cli("run", "echo", str(other))
        assert code == 0 and json.loads(out)["text"] == "hi", err


def test_an_option_value_that_starts_like_json_but_does_not_parse_is_refused(cli):
    """`-O 'schema=[{"甲方": ["地址"]'` (the closing `}]` missing) ran with a field literally named by the broken
    text; now exit 2 with the key and where the JSON breaks. Plain text and valid JSON still work."""
    code, out, err = cli("run", "echo", "-", "-O", 'uppercase=[{"x": ["y"]', stdin='{"text": "a"}\n')
    assert code == 2 and out == ""
    flat = " ".join(err.split())
    assert "uppercase=...: the value starts like JSON but does not parse" in flat and "character" in flat
    code, out, err = cli("run", "echo", "-", "-O", "uppercase=true", stdin='{"text": "a"}\n')
    assert code == 0 and json.loads(out)["text"] == "A", err


def test_messages_holding_square_brackets_print_as_they_are(cli, tmp_path):
    # error texts and file names are not Rich markup: "[tasks.*]" vanished, "[/x]" raised MarkupError
    folder = tmp_path / "[x] [bold]in"
    folder.mkdir()
    missing = folder / "none.jsonl"
    code, out, err = cli("run", "echo", str(missing))
    assert code == 2 and out == ""
    assert "[x] [bold]in" in err.replace("\n", "")
    code, out, err = cli("run", "echo", "-", "-O", "[/bold]=1", stdin='{"text": "a"}\n')
    assert code == 2 and "[/bold]" in err
    source = folder / "in.csv"
    source.write_text("text\n\"\"\nfine\n")
    code, _, err = cli("run", "echo", str(source), "-o", str(tmp_path / "out.jsonl"), "--on-error", "skip")
    assert code == 0 and "skipped row 2: text: missing or empty" in err
    empty = folder / "empty.csv"
    empty.write_text("text\n")
    code, _, err = cli("run", "echo", str(empty), "-o", str(tmp_path / "out2.jsonl"))
    assert code == 1 and f"no rows in {empty}" in err.replace("\n", "")


def test_a_csv_cell_longer_than_pythons_default_limit_is_read(cli, tmp_path):
    """A contract in one CSV cell: over csv's default 131,072 characters it was a `_csv.Error` traceback."""
    text = "Ship 7 crates " * 12_000  # 168,000 characters
    source = tmp_path / "long.csv"
    with open(source, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([["text"], [text], ["short"]])
    from sectorflow.input_files import read_csv

    assert [(row, len(record["text"])) for row, record in read_csv(source)] == [(2, 168_000), (3, 5)]


def test_a_csv_header_that_names_a_column_twice_is_refused(cli, tmp_path):
    source = tmp_path / "dup.csv"
    source.write_text("text,ticket,text\nfirst,7,second\n")
    code, out, err = cli("run", "echo", str(source))
    assert code == 2 and out == ""
    assert (f"The CSV header of {source} names 'text' more than once; rename or drop the extra column(s)") in err


@pytest.mark.parametrize("encoding", ["ascii", "gbk"])
def test_results_on_standard_output_are_utf8_whatever_the_console_encoding(echo_registry, monkeypatch, tmp_path,
                                                                          encoding):
    """Under PYTHONIOENCODING=ascii a Chinese result was a UnicodeEncodeError traceback; under gbk the JSON lines
    were GBK bytes."""
    source = tmp_path / "in.jsonl"
    write_jsonl(source, [{"text": "胸片显示右肺结节"}])
    raw = io.BytesIO()
    stdout = io.TextIOWrapper(raw, encoding=encoding)
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["run", "echo", str(source)]) == 0
    stdout.flush()
    assert json.loads(raw.getvalue().decode("utf-8"))["text"] == "胸片显示右肺结节"


@pytest.mark.parametrize("command", [["quantize"], ["export", "--format", "onnx"]])
@pytest.mark.parametrize("value", ["", " "])
def test_models_commands_refuse_an_empty_task_path(cli, tmp_path, command, value):
    """``sectorflow models quantize|export --task-path "$MODEL_DIR"`` with the variable unset: typer made Path("") of
    it, the current folder, reported as ". is not a model bundle"; now refused as ``sectorflow run`` refuses it."""
    code, out, err = cli("models", command[0], "echo", *command[1:], "--task-path", value,
                         "--out", str(tmp_path / "o"))
    err = " ".join(err.split())
    assert code == 2 and out == ""
    assert f"--task-path {value!r} is {'empty' if not value else 'blank'}: give the path of a model bundle folder, or " \
           "leave the option out for the task's own bundle" in err
    assert "is not a model bundle" not in err and not (tmp_path / "o").exists()
    code, _, err = cli("models", command[0], "echo", *command[1:], "--task-path", str(tmp_path), "--out",
                       str(tmp_path / "o"))  # a folder given is still read as a bundle
    assert code == 2 and f"{tmp_path} is not a model bundle" in " ".join(err.split())


@pytest.mark.parametrize("command", [["quantize"], ["export", "--format", "onnx"]])
@pytest.mark.parametrize("value", ["", " "])
def test_models_commands_refuse_an_empty_out(cli, tmp_path, monkeypatch, command, value):
    """``--out "$OUT"`` with the variable unset was Path(""), the current folder: run from inside a bundle folder,
    export and quantize replace that folder (shutil.rmtree('.') deleted its files, then failed with a traceback)."""
    (tmp_path / "manifest.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("models", command[0], "echo", *command[1:], "--out", value)
    err = " ".join(err.split())
    assert code == 2 and out == ""
    assert f"--out {value!r} is {'empty' if not value else 'blank'}: give the folder to write the bundle to, or " \
           "leave the option out for the default" in err
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_a_killed_runs_partial_output_is_removed_by_the_next_run_and_a_live_ones_is_kept(cli, tmp_path):
    """A run killed with SIGKILL leaves its ``.<output>.partial-<pid>`` (fresh-user report, 2 Dec 2026: 73 MB that
    nothing removed); the next run to that ``--output`` deletes it and says so, leaving a live process's file."""
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_jsonl(source, ITEMS)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale, running = tmp_path / f".out.jsonl.partial-{gone.pid}", tmp_path / f".out.jsonl.partial-{live.pid}"
        stale.write_text('{"cut": ')
        running.write_text('{"still": "writing"}\n')
        other = tmp_path / f".other.jsonl.partial-{gone.pid}"  # another output's: not this run's business
        other.write_text("x")
        code, _, err = cli("run", "echo", str(source), "--output", str(target))
        assert code == 0
        assert f"removed {stale} (8 bytes), the partial output of an earlier run that was killed" in " ".join(err.split())
        assert not stale.exists() and running.read_text() == '{"still": "writing"}\n' and other.exists()
        assert [json.loads(line) for line in target.read_text().splitlines()] == expected_lines(ITEMS)
    finally:
        live.kill()
        live.wait()


CTRL_C_WHILE_IMPORTING = """
import builtins, os, signal, sys
real = builtins.__import__
def hook(name, *args, **kwargs):
    if name == "sectorflow.cli" and sys.argv[1] == "signal":  # Ctrl-C while the package loads
        os.kill(os.getpid(), signal.SIGINT)
    if name == "sectorflow.cli" and sys.argv[1] == "raise":  # ... arriving before the handler was in place
        raise KeyboardInterrupt
    return real(name, *args, **kwargs)
builtins.__import__ = hook
import sectorflow_cli
sys.exit(sectorflow_cli.main(["tasks"]))
"""


@pytest.mark.parametrize("how", ["signal", "raise"])
def test_ctrl_c_while_the_package_is_imported_is_one_line_and_exit_130(how):
    """Fresh-user report: Ctrl-C in the first ~0.5 s of ``sectorflow run`` (importing the package, before
    ``sectorflow.cli.main`` runs) printed a KeyboardInterrupt traceback; later it is one line and exit 130. The
    script's entry point is now ``sectorflow_cli:main``, which imports the package inside its own handling."""
    from importlib.metadata import entry_points

    (script,) = [point for point in entry_points(group="console_scripts") if point.name == "sectorflow"]
    assert script.value == "sectorflow_cli:main"
    done = subprocess.run([PYTHON, "-c", CTRL_C_WHILE_IMPORTING, how], capture_output=True, text=True, timeout=120,
                          env=child_env())
    assert done.returncode == 130, done.stderr
    assert done.stderr == "stopped by SIGINT.\n" and done.stdout == ""
