"""``sectorflow run --column FIELD=COLUMN --default FIELD=VALUE``: the built-in csv/jsonl readers rename columns,
a task's reader factories get the options, and every mistake is a ConfigError (exit 2) that says what to fix."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from core_support import echo_plugin

from sectorflow import ConfigError, InputFormat, Taskflow, hookimpl, plugins
from sectorflow.cli import main
from sectorflow.input_files import reader_for, remap

TEXTS = ["hello world", "Ship 42 crates", "UPPER lower"]


@pytest.fixture
def cli(echo_registry, capsys, monkeypatch):
    """``cli(*args) -> (exit code, stdout, stderr)``, in-process, with only the echo plugin registered."""
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, " ".join(err.split())  # rich wraps long messages

    return run


def expected(texts: list[str]) -> list[dict]:
    return [r.model_dump(mode="json") for r in Taskflow("echo")([{"text": t} for t in texts])]


def test_csv_columns_are_renamed_and_defaults_fill_empty_cells(cli, tmp_path):
    source = tmp_path / "bank.csv"
    source.write_text("Ref,Body Text\n1,hello world\n2,\n3,UPPER lower\n", encoding="utf-8")
    code, out, err = cli("run", "echo", str(source), "--column", "text=Body Text", "--default", "text=Ship 42 crates")
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == expected(["hello world", "Ship 42 crates",
                                                                         "UPPER lower"])
    assert "3 item(s) processed, 0 row(s) skipped." in err
    # without the default, the empty cell is a bad row (the mapping alone does not invent a value)
    code, _, err = cli("run", "echo", str(source), "--column", "text=Body Text", "--on-error", "skip")
    assert code == 0 and "skipped row 3: text: missing or empty" in err  # the file's line 3


def test_jsonl_keys_are_renamed(cli, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"body": t, "id": i}) + "\n" for i, t in enumerate(TEXTS)))
    code, out, err = cli("run", "echo", str(source), "--column", " text = body ")  # spaces around names are dropped
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == expected(TEXTS)


def test_remap_renames_swaps_and_keeps_other_columns():
    record = {"a": "1", "b": "2", "c": "3"}
    assert remap(record, {"a": "b", "b": "a"}, None) == {"a": "2", "b": "1", "c": "3"}
    assert remap(record, {"x": "c"}, {"x": "9", "y": "8"}) == {"a": "1", "b": "2", "x": "3", "y": "8"}
    assert remap({"x": "0"}, {"x": "c"}, None) == {}  # a column named like a mapped field is not that field
    assert remap(record, None, None) is record


@pytest.mark.parametrize("args, fragments", [
    (("--column", "body=Body"), ["'body' is not an input field of task 'echo'", "its input fields are: text"]),
    (("--default", "lang=en"), ["'lang' is not an input field", "its input fields are: text"]),
    (("--column", "text"), ["--column 'text': write FIELD=COLUMN", "--column transaction_id='Txn Ref'"]),
    (("--column", "text="), ["--column 'text=': write FIELD=COLUMN"]),
    (("--default", "=x"), ["--default '=x': write FIELD=VALUE"]),
    (("--column", "text=Body", "--column", "text=Other"), ["--column gives 'text' twice ('Body' and 'Other')"]),
    (("--column", "text=Body", "--format", "lines"),
     ["Format 'lines' of task 'echo' has fixed columns: it takes no --column/--default. Formats that do: csv, jsonl"]),
    (("--column", "text=body"),
     ["The CSV header of", "lacks the mapped column(s) 'body' (for text); found: 'Ref', 'Body'",
      "case- and space-sensitive"]),
])
def test_mistakes_are_config_errors_that_say_what_to_fix(cli, tmp_path, args, fragments):
    source = tmp_path / "in.csv"
    source.write_text("Ref,Body\n1,hello\n", encoding="utf-8")
    code, out, err = cli("run", "echo", str(source), *args)
    assert code == 2 and out == ""
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_a_plugins_reader_factory_gets_the_options(echo_registry, tmp_path):
    """A factory-only format is read by ``factory()`` without options; a plugin's ``csv`` factory replaces the
    built-in one for both plain and mapped reads."""
    calls: list[tuple] = []

    def factory(mapping=None, defaults=None):
        calls.append((mapping, defaults))

        def read(source):
            yield 1, {"text": f"{mapping} {defaults}"}

        return read

    echo = plugins.get_task("echo")
    spec = dataclasses.replace(echo, formats={**echo.formats, "pipes": InputFormat(factory=factory),
                                              "csv": InputFormat(factory=factory)})
    source = tmp_path / "in.pipes"
    source.write_text("x")
    assert list(reader_for(spec, None, source)(source)) == [(1, {"text": "None None"})]
    assert list(reader_for(spec, "csv", source, mapping={"text": "T"})(source)) == [(1, {"text": "{'text': 'T'} None"})]
    assert calls == [(None, None), ({"text": "T"}, None)]
    with pytest.raises(ConfigError, match="Formats that do: csv, jsonl, pipes"):
        reader_for(spec, "lines", source, defaults={"text": "x"})


def test_columns_that_are_no_input_fields_are_ignored_with_one_warning(echo_registry, tmp_path, caplog):
    """An export's extra columns (a ticket number) do not make every row of a text task bad: a task whose input
    model refuses unknown keys (TextItem) gets only its fields from the built-in csv/jsonl readers, and one warning
    per file names what was left out, so a misspelt column is still seen."""
    from sectorflow import TextItem

    class Note(TextItem):
        text_hint = "the note"

    spec = dataclasses.replace(plugins.get_task("echo"), input_model=Note)
    csv_file = tmp_path / "export.csv"
    csv_file.write_text("ticket,message,agent\n7,hello world,ann\n8,UPPER lower,bob\n", encoding="utf-8")
    read = reader_for(spec, None, csv_file, mapping={"text": "message"})
    with caplog.at_level("WARNING", logger="sectorflow"):
        assert list(read(csv_file)) == [(2, {"text": "hello world"}), (3, {"text": "UPPER lower"})]
        assert list(read(csv_file)) == [(2, {"text": "hello world"}), (3, {"text": "UPPER lower"})]  # read again
    warnings = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert warnings == [f"{csv_file}: 'ticket', 'agent' are not input fields of task 'echo': ignored (its input "
                        "fields: text). To read one as a field: --column FIELD=COLUMN."]
    jsonl_file = tmp_path / "in.jsonl"
    jsonl_file.write_text(json.dumps({"text": "hi", "txet": "typo"}) + "\n", encoding="utf-8")
    caplog.clear()
    with caplog.at_level("WARNING", logger="sectorflow"):
        assert list(reader_for(spec, None, jsonl_file)(jsonl_file)) == [(1, {"text": "hi"})]
    assert "'txet' is not an input field of task 'echo'" in caplog.text
    # without the wrapper's help the row would be refused by the model
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        Note.model_validate({"text": "hi", "txet": "typo"})


def test_a_task_whose_model_keeps_extra_keys_gets_every_column(echo_registry, tmp_path):
    from pydantic import BaseModel, ConfigDict

    class Loose(BaseModel):
        model_config = ConfigDict(extra="allow")
        text: str

    spec = dataclasses.replace(plugins.get_task("echo"), input_model=Loose)
    source = tmp_path / "in.csv"
    source.write_text("text,more\nhi,there\n", encoding="utf-8")
    assert list(reader_for(spec, None, source)(source)) == [(2, {"text": "hi", "more": "there"})]


# --- reader factories that take the task's input context (sectorflow.input_files takes_context) -------------------

def _context_task(factory, *, readers=None):
    """The echo spec with an input context from the option ``prefix`` and ``factory`` as its ``pipes`` format."""
    captured: list = []
    echo_plugin().sectorflow_register_tasks(register=captured.append)
    return dataclasses.replace(
        captured[0], options={**captured[0].options, "prefix": "text put before each raw item"},
        context_from_options=lambda options: {} if options.get("prefix") is None else {"prefix": options["prefix"]},
        formats={**captured[0].formats, "pipes": InputFormat(readers["pipes"] if readers else None, factory)})


def _one_task(spec):
    class One:
        @hookimpl
        def sectorflow_register_tasks(self, register):
            register(spec)

    return One()


def _pipes(source):
    for row, line in enumerate(Path(source).read_text(encoding="utf-8").splitlines(), start=1):
        yield row, dict(zip(("text", "note"), line.split("|")))


def test_a_reader_factory_with_a_context_parameter_gets_the_runs_input_context(registry, tmp_path, capsys):
    """``sectorflow run -O prefix=...`` hands the factory the context Taskflow validates with (read-only), also
    without --column (the format's plain reader cannot be told it, so the factory is used), and with --column."""
    calls: list = []

    def factory(mapping=None, defaults=None, *, context=None):
        calls.append((mapping, defaults, context))

        def read(source):
            for row, record in _pipes(source):
                yield row, {"text": f"{(context or {}).get('prefix', '')}{remap(record, mapping, defaults)['text']}"}

        return read

    def plain(source):  # what the format reads without the context: must not be used when a context is given
        raise AssertionError("the plain reader was used")

    registry({"ctx": _one_task(_context_task(factory, readers={"pipes": plain}))})
    source = tmp_path / "in.pipes"
    source.write_text("hello|a\nworld|b\n", encoding="utf-8")
    assert main(["run", "echo", str(source), "-O", "prefix=>> "]) == 0, capsys.readouterr().err
    assert [json.loads(line)["text"] for line in capsys.readouterr().out.splitlines()] == [">> hello", ">> world"]
    assert [(m, d, dict(c)) for m, d, c in calls] == [(None, None, {"prefix": ">> "})]
    with pytest.raises(TypeError):
        calls[0][2]["prefix"] = "changed"  # the task's own context is not the reader's to change
    calls.clear()
    assert main(["run", "echo", str(source), "--column", "text=note"]) == 0, capsys.readouterr().err
    assert [json.loads(line)["text"] for line in capsys.readouterr().out.splitlines()] == ["a", "b"]
    assert [(m, d, dict(c)) for m, d, c in calls] == [({"text": "note"}, None, {})]  # no option: an empty context
    # reader_for without a context (a caller that has none) keeps the old behaviour: the plain reader, no context
    calls.clear()
    spec = plugins.get_task("echo")
    assert reader_for(spec, "pipes", source) is not None and calls == []
    assert list(reader_for(spec, "pipes", source, mapping={"text": "note"})(source)) == [(1, {"text": "a"}),
                                                                                          (2, {"text": "b"})]
    assert calls == [({"text": "note"}, None, None)]


def test_a_reader_factory_without_a_context_parameter_is_called_as_before(registry, tmp_path, capsys):
    """Factories written before the context existed (no ``context`` parameter, or only ``**options``) are never
    handed it: the run works, the plain reader still reads a format without --column, and the factory with it."""
    calls: list = []

    def old(mapping=None, defaults=None):
        calls.append(("old", mapping, defaults))
        return lambda source: ((row, remap(record, mapping, defaults)) for row, record in _pipes(source))

    def catch_all(**options):
        calls.append(("catch_all", options))
        return lambda source: ((row, {"text": record["text"]}) for row, record in _pipes(source))

    def plain(source):
        calls.append(("plain",))
        return ((row, {"text": record["text"]}) for row, record in _pipes(source))

    source = tmp_path / "in.pipes"
    source.write_text("hello|a\nworld|b\n", encoding="utf-8")
    registry({"ctx": _one_task(_context_task(old, readers={"pipes": plain}))})
    assert main(["run", "echo", str(source), "-O", "prefix=>> "]) == 0, capsys.readouterr().err
    assert [json.loads(line)["text"] for line in capsys.readouterr().out.splitlines()] == ["hello", "world"]
    assert calls == [("plain",)]  # read once: --on-error reject no longer reads the file twice (issue 26)
    calls.clear()
    assert main(["run", "echo", str(source), "--column", "text=note", "-O", "prefix=>> "]) == 0
    assert [json.loads(line)["text"] for line in capsys.readouterr().out.splitlines()] == ["a", "b"]
    assert calls == [("old", {"text": "note"}, None)]
    calls.clear()
    spec = _context_task(catch_all)
    read = reader_for(spec, "pipes", source, mapping={"text": "note"}, context={"prefix": ">> "})
    assert list(read(source)) == [(1, {"text": "hello"}), (2, {"text": "world"})]
    assert calls == [("catch_all", {"mapping": {"text": "note"}, "defaults": None})]  # no context= in **options


def test_a_rejected_file_is_read_once_and_every_bad_row_is_listed(registry, tmp_path, capsys):
    """--on-error reject (the default) reads and validates the file once (issue 26: it used to check every row, then
    read the file again to run it): the rows after the first bad one are validated, not run, and nothing is written."""
    reads: list[str] = []

    def plain(source):
        reads.append(str(source))
        return ((row, {"text": record["text"]}) for row, record in _pipes(source))

    source, target = tmp_path / "in.pipes", tmp_path / "out.jsonl"
    source.write_text("".join(f"t{i}|n\n" for i in range(1500)) + "|empty\nok|n\n|empty too\n", encoding="utf-8")
    registry({"ctx": _one_task(_context_task(lambda mapping=None, defaults=None: plain, readers={"pipes": plain}))})
    assert main(["run", "echo", str(source), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert reads == [str(source)]
    assert f"2 bad row(s) in {source} (first: row 1501); nothing was written." in err
    assert not target.exists() and not list(tmp_path.glob(".out.jsonl.partial-*"))
