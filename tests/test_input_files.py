"""Input files a user hands ``sectorflow run`` (and the readers ``sectorflow.input_files.reader_for`` makes): files that
concatenate exports, Excel's unnamed trailing columns, and files that fail while they are read (a corrupt Parquet
page) give rows or a typed error naming the file, never a traceback or silently lost rows."""

from __future__ import annotations

import errno
import json

import pytest

from sectorflow import ConfigError, InvalidInputError
from sectorflow.input_files import checked_reader, read_csv, read_jsonl


def test_a_byte_order_mark_inside_a_json_lines_file_is_dropped(tmp_path):
    """``cat a.jsonl b.jsonl`` of two files saved with a BOM: the second file's first line was a bad row
    ("Unexpected UTF-8 BOM")."""
    source = tmp_path / "joined.jsonl"
    source.write_bytes(b'\xef\xbb\xbf{"text": "from a"}\n\xef\xbb\xbf{"text": "from b"}\r\n\xef\xbb\xbf\n')
    assert list(read_jsonl(source)) == [(1, {"text": "from a"}), (2, {"text": "from b"})]


def test_excel_unnamed_trailing_columns_are_not_refused_as_repeated(tmp_path):
    """Excel writes ``text,,`` for a sheet with two empty formatted columns: refused as "names '' more than once"."""
    source = tmp_path / "excel.csv"
    source.write_text("text,,\r\nhello,,\r\nworld,,\r\n")
    assert list(read_csv(source)) == [(2, {"text": "hello"}), (3, {"text": "world"})]  # rows by file line
    source.write_text("text,text,,\nhello,again,,\n")  # a named column twice is still refused
    with pytest.raises(ConfigError, match=r"names 'text' more than once"):
        list(read_csv(source))


def test_a_value_under_an_unnamed_column_is_named_in_the_ignored_columns_warning(echo_registry, tmp_path, caplog):
    from sectorflow import plugins
    from sectorflow.input_files import reader_for

    source = tmp_path / "excel.csv"
    source.write_text("text,,\nhello,,stray\n")
    rows = list(reader_for(plugins.get_task("echo"), None, source)(source))
    assert rows == [(2, {"text": "hello"})]
    assert "'' is not an input field of task 'echo': ignored" in caplog.text


def test_an_os_error_while_reading_is_an_input_error_naming_the_file_and_row(tmp_path):
    def failing(source):
        yield 1, {"text": "first"}
        raise OSError(errno.EIO, "Input/output error")

    rows = checked_reader(failing)(tmp_path / "disk.jsonl")
    assert next(rows) == (1, {"text": "first"})
    with pytest.raises(InvalidInputError) as info:
        next(rows)
    assert str(info.value) == f"Input file {tmp_path / 'disk.jsonl'} could not be read: Input/output error after row 1."


def test_a_parquet_file_with_a_corrupt_page_is_an_input_error_not_a_traceback(tmp_path):
    """pyarrow raises a bare OSError ("Corrupt snappy compressed data") from the middle of a Parquet file whose footer
    is intact, so the reader's open succeeds and the failure comes while rows are read."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    source = tmp_path / "t.parquet"
    pq.write_table(pa.table({"text": [f"text number {i}" for i in range(2000)]}), source, compression="snappy")
    data = bytearray(source.read_bytes())
    for k in range(200, 264):  # inside the first data page
        data[k] ^= 0x5A
    source.write_bytes(bytes(data))

    def read_parquet(path):
        for row, record in enumerate((r for b in pq.ParquetFile(path).iter_batches() for r in b.to_pylist()), 1):
            yield row, record

    with pytest.raises(InvalidInputError) as info:
        list(checked_reader(read_parquet)(source))
    assert str(info.value) == f"Input file {source} could not be read: Corrupt snappy compressed data."


def test_run_reports_a_concatenated_json_lines_file_in_full(echo_registry, tmp_path, capsys):
    from sectorflow.cli import main

    source = tmp_path / "joined.jsonl"
    source.write_bytes(b'\xef\xbb\xbf{"text": "from a"}\n\xef\xbb\xbf{"text": "from b"}\n')
    capsys.readouterr()
    assert main(["run", "echo", str(source)]) == 0
    out = capsys.readouterr().out
    assert [json.loads(line)["text"] for line in out.splitlines()] == ["from a", "from b"]


@pytest.mark.parametrize("content", ['[\n  {"text": "a"},\n  {"text": "b"}\n]\n', '\ufeff[{"text": "a"}, {"text": "b"}]\n'])
def test_a_json_array_file_is_refused_whole_with_the_way_to_convert_it(echo_registry, tmp_path, capsys, content):
    """A pretty-printed array read as JSON lines: line 3 ('  {"text": "b"}') parsed and the others failed, so
    --on-error skip processed one of the two objects."""
    from sectorflow.cli import main

    source = tmp_path / "export.json"
    source.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInputError) as info:
        list(read_jsonl(source))
    message = (f"Input file {source} holds one JSON array (line 1 begins with '['), not JSON lines: write one JSON "
               "object per line, e.g. jq -c '.[]' FILE.json > FILE.jsonl.")
    assert str(info.value) == message
    for mode in ("reject", "skip"):
        capsys.readouterr()
        assert main(["run", "echo", str(source), "--on-error", mode]) == 2
        out, err = capsys.readouterr()
        assert out == "" and "holds one JSON array" in err


def test_a_list_after_the_first_line_is_still_one_bad_row(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "a"}\n[1, 2]\n{"text": "b"}\n')
    rows = list(read_jsonl(source))
    assert rows[0] == (1, {"text": "a"}) and rows[2] == (3, {"text": "b"})
    assert rows[1][0] == 2 and rows[1][1].details == [{"row": 2, "field": None, "reason": "a JSON list, not an object"}]


def test_a_named_pipe_is_refused_as_not_a_regular_file_not_as_missing(echo_registry, tmp_path, capsys):
    """bash's ``sectorflow run echo <(zcat x.gz)`` hands over /dev/fd/63, a pipe: it was "does not exist"."""
    import os

    from sectorflow.cli import main

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    capsys.readouterr()
    assert main(["run", "echo", str(fifo), "--format", "jsonl"]) == 2
    err = capsys.readouterr().err
    assert f"Input file {fifo} is not a regular file (a pipe or a device)" in err and "does not exist" not in err
    with pytest.raises(ConfigError, match=r"give - as the input"):
        list(read_csv(fifo))


def test_a_json_line_nested_too_deeply_is_one_bad_row_not_a_recursion_error(tmp_path):
    source = tmp_path / "deep.jsonl"
    source.write_text('{"text": "ok"}\n{"text": ' + "[" * 100_000 + "]" * 100_000 + '}\n{"text": "last"}\n')
    rows = list(read_jsonl(source))
    reason = "values nested too deeply to read (thousands of [ or {): flatten the line's values"
    assert rows[0] == (1, {"text": "ok"}) and rows[2] == (3, {"text": "last"})
    assert rows[1][0] == 2 and rows[1][1].details == [{"row": 2, "field": None, "reason": reason}]


def test_a_json_line_with_an_integer_longer_than_python_reads_is_one_bad_row(tmp_path):
    """Python 3.11 reads at most 4,300 digits of an integer; json.loads raised a plain ValueError (not a
    JSONDecodeError), a traceback that stopped the run."""
    source = tmp_path / "long.jsonl"
    source.write_text('{"text": "ok"}\n{"text": 1' + "0" * 5000 + '}\n{"text": "last"}\n')
    rows = list(read_jsonl(source))
    reason = ("a number too long to read (Exceeds the limit (4300 digits) for integer string conversion): write it "
              "as a string")
    assert rows[0] == (1, {"text": "ok"}) and rows[2] == (3, {"text": "last"})
    assert rows[1][0] == 2 and rows[1][1].details == [{"row": 2, "field": None, "reason": reason}]


def test_parse_json_line_is_the_public_guard_both_wordings():
    """``sectorflow.parse_json_line``: the one JSON-line guard the built-in ``jsonl`` reader and plugin readers (aml's
    ``jsonl``) share; without ``fix`` the built-in's short reasons, with ``fix`` reasons naming line, column and an
    excerpt that end with it."""
    from sectorflow import parse_json_line

    assert parse_json_line('\ufeff{"amount": 1.10, "n": 7}\n', "f.jsonl", 3) == {"amount": 1.1, "n": 7}
    assert parse_json_line('{"amount": 1.10}\n', "f.jsonl", 3, parse_float=str) == {"amount": "1.10"}
    cases = [  # line, (message, reason) without fix, reason with fix="FIX"
        ("not json\n", ("Row 4 is not valid JSON: Expecting value.", "not JSON: Expecting value"),
         "line 4 is not valid JSON (Expecting value at column 1: 'not json'); FIX"),
        ("[1, 2]\n", ("Row 4 is a JSON list, not an object.", "a JSON list, not an object"),
         "line 4 holds an array ('[1, 2]'), not a JSON object; FIX"),
        ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
         ("Row 4: values nested too deeply to read (thousands of [ or {): flatten the line's values.",
          "values nested too deeply to read (thousands of [ or {): flatten the line's values"),
         "line 4 nests its values too deeply to read (thousands of [ or {): FIX"),
        ('{"a": 1' + "0" * 5000 + "}\n",
         ("Row 4: a number too long to read (Exceeds the limit (4300 digits) for integer string conversion): write "
          "it as a string.",
          "a number too long to read (Exceeds the limit (4300 digits) for integer string conversion): write it as a "
          "string"),
         "line 4 holds a number too long to read (Exceeds the limit (4300 digits) for integer string conversion): "
         "write it as a string, or fix the line"),
    ]
    for line, (message, reason), fixed in cases:
        with pytest.raises(InvalidInputError) as short:
            parse_json_line(line, "f.jsonl", 4)
        assert str(short.value) == message and short.value.details == [{"row": 4, "field": None, "reason": reason}]
        with pytest.raises(InvalidInputError) as long:
            parse_json_line(line, "f.jsonl", 4, fix="FIX")
        assert str(long.value) == f"f.jsonl: {fixed}." and long.value.details == [
            {"row": 4, "field": None, "reason": fixed}]


def test_a_csv_read_as_json_lines_is_refused_whole_naming_format_csv(tmp_path):
    """Every row failed as "not JSON" and the advice was --on-error skip, which skips them all."""
    source = tmp_path / "export.jsonl"
    source.write_text("text,ticket\nhello,1\n")
    with pytest.raises(InvalidInputError) as info:
        list(read_jsonl(source))
    assert str(info.value).startswith(f"Input file {source} looks like CSV, not JSON lines: line 1 reads as a CSV "
                                      "header ('text,ticket'). Read it with --format csv")
    source.write_text('{"text": "a"}\nnot json, but later\n')  # a bad line after good ones stays a bad row
    rows = list(read_jsonl(source))
    assert rows[0] == (1, {"text": "a"}) and isinstance(rows[1][1], InvalidInputError)
